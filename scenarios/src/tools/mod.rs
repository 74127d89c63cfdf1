//! The sixth and last layer: the commands built on the layers before it
//! (and importing from any of them).
//!
//! - [`optimize`]: `bounce optimize`, the search over one struct's field
//!   order and line alignments;
//! - [`validate`]: `bounce validate`, the presets against the measured
//!   core-to-core latency matrices in `data/c2c`;
//! - [`layout_view`]: `bounce layout`, the pahole-style view of a struct with
//!   a run's per-member traffic;
//! - [`presets_view`]: `bounce presets`, the presets as a user reads them or
//!   saves them as TOML;
//! - [`import`]: `bounce import btf`, a struct of the kernel's BTF as a
//!   scenario's `[structs.NAME]` table.

pub mod import;
pub mod layout_view;
pub mod optimize;
pub mod presets_view;
pub mod validate;
