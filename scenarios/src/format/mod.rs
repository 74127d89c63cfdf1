//! The first layer: the scenario file format, from TOML text to checked
//! documents with byte spans, and the errors that point into the file.
//!
//! It imports from no other layer of the crate. Within it, modules are read
//! in this order:
//!
//! - [`error`]: [`SourceFile`], [`InputError`] (file, line, column, key,
//!   what would be valid, a did-you-mean) and [`closest`](error::closest);
//! - [`schema`]: the serde types of a scenario file, [`ScenarioDoc`];
//! - [`document`]: parsing the file into a spanned tree, merging the library
//!   modules of `use`, reading pahole listings, deserializing and checking
//!   the base and patching each variant ([`Variant`]);
//! - [`sweep`]: expanding `[sweep]` into cases, each one more set of patches
//!   with a seed derived from its id;
//! - [`LoadedScenario`]: the base, variants and cases, as the later layers
//!   take them;
//! - [`measured`]: the load-time checks of `[[measured]]`;
//! - [`load`] and [`read_file`]: the whole of loading, in that order;
//! - [`read`]: the one bounded reader every file bounce reads goes through.
//!
//! Which machine a document describes is the next layer's
//! ([`crate::machine`]); a sweep needs it to turn CPU counts into CPUs, so
//! [`load`] is given it as a [`MachineOf`], and the crate root's
//! [`load_str`](crate::load_str) and [`load_file`](crate::load_file) pass
//! [`crate::machine::build_machine`].

pub mod document;
pub mod error;
mod load;
pub mod machine_file;
pub mod measured;
pub mod read;
mod scenario;
pub mod schema;
pub mod sweep;

pub use document::import::ImportScope;
pub use document::Variant;
pub use error::{Inlined, InputError, SourceFile};
pub use load::{load, read_file};
pub use scenario::LoadedScenario;
pub use schema::ScenarioDoc;
pub use sim_core::limits::Limits;
pub use sweep::MachineOf;
