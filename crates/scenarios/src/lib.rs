//! Scenario files for `bounce`: TOML in, typed and validated documents out.

pub mod document;
pub mod error;
pub mod schema;

pub use document::{load_file, load_str, LoadedScenario, Variant};
pub use error::{InputError, SourceFile};
pub use schema::ScenarioDoc;
