//! The `bounce` package's library half: what the binary and the book's
//! generator (`xtask`) share, so the book shows exactly what a reader gets
//! from the command line.
//!
//! - [`charts`]: a results file turned into the plain data of the `plots`
//!   crate, and the SVGs `bounce run FILE --out DIR` writes.

pub mod charts;
