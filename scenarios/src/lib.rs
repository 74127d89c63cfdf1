//! scenarios: the TOML scenario format, its validation with precise errors,
//! variants as patches on a base, sweeps as cases of more patches, building
//! runnable configurations, running them (in parallel across runs), the
//! result records, results files and text reports.
//!
//! It never draws and never simulates by itself: simulation is `sim-core`'s,
//! machines and layout rules are `models`'.

pub mod build;
pub mod cases;
pub mod document;
pub mod error;
pub mod layout_view;
pub mod measured;
pub mod optimize;
pub mod output;
pub mod presets_view;
pub mod report;
pub mod results;
pub mod schema;
pub mod timeline;
pub mod trace;
pub mod validate;

pub use document::{
    load_file, load_file_with, load_str, load_str_with, Limits, LoadedScenario, Variant,
};
pub use error::{InputError, SourceFile};
pub use schema::ScenarioDoc;
