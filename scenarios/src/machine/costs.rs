//! The instruction costs a document's machine gives `cost(NAME)` in
//! scripts.

use models::presets::{self, Param};

use crate::format::schema::{MachineRef, ScenarioDoc};

/// The machine's instruction costs for `cost(NAME)`: the preset's (every
/// preset has the default classes), or the defaults for a machine without
/// one, then `[machine.cost]` on top. A preset name that does not resolve
/// was reported by [`build_machine`](crate::machine::build_machine)
/// already; it gives the defaults here.
pub fn instruction_costs(doc: &ScenarioDoc) -> Vec<(String, i64)> {
    let preset = match &doc.machine {
        MachineRef::Preset(name) => Some(name),
        MachineRef::Inline(m) => m.preset.as_ref(),
    };
    let resolved = preset.and_then(|name| presets::resolve_preset(name.get_ref()).ok());
    instruction_costs_from(doc, resolved.as_ref().map(|r| r.params.as_slice()))
}

/// [`instruction_costs`] with the document's preset already resolved:
/// `preset_params` are its parameters (`None` for a machine without a
/// preset, or one that does not resolve).
pub(crate) fn instruction_costs_from(
    doc: &ScenarioDoc,
    preset_params: Option<&[Param]>,
) -> Vec<(String, i64)> {
    let mut costs = match preset_params {
        Some(params) => presets::instruction_costs(params),
        None => presets::instruction_costs(&presets::default_instruction_costs()),
    };
    if let MachineRef::Inline(m) = &doc.machine {
        for (class, cycles) in &m.cost {
            let cycles = (*cycles.get_ref()).min(i64::MAX as u64) as i64;
            match costs.iter_mut().find(|(c, _)| c == class) {
                Some(entry) => entry.1 = cycles,
                None => costs.push((class.clone(), cycles)),
            }
        }
    }
    costs
}
