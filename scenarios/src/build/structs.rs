//! A document's structs and instances as the layout rules take them, and
//! layout errors at the key in the file that caused them.

use models::layout::{self, BitField, FieldSpec, FieldType, LayoutError, StructSpec};

use crate::format::error::InputError;
use crate::format::schema::{self, FieldShape, ScenarioDoc};
use crate::format::LoadedScenario;

pub(crate) fn layout_error(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    e: LayoutError,
) -> InputError {
    // A struct field, a struct, or an instance.
    if let Some(s) = doc.structs.get(&e.owner) {
        if let Some(field_name) = &e.field {
            if let Some(f) = s.fields.iter().find(|f| f.name.get_ref() == field_name) {
                let span = match e.key {
                    "type" => f.ty.as_ref().map(|t| t.span()),
                    "align" => f.align.as_ref().map(|t| t.span()),
                    "offset" => f.offset.as_ref().map(|t| t.span()),
                    "count" => f.count.as_ref().map(|t| t.span()),
                    "size" => f.size.as_ref().map(|t| t.span()),
                    "anonymous" => f.anonymous.as_ref().map(|t| t.span()),
                    "bits" => f.bits.as_ref().map(|t| t.span()),
                    _ => None,
                }
                .unwrap_or_else(|| f.name.span());
                let mut error = loaded.error_at(
                    span,
                    &format!("structs.{}.fields.{}.{}", e.owner, field_name, e.key),
                    e.message.clone(),
                );
                if e.key == "type" && e.message.starts_with("unknown C type") {
                    let given = f.ty.as_ref().map(|t| t.get_ref().as_str()).unwrap_or("");
                    // C types, and the struct names as a field would write them.
                    let declared: Vec<String> = doc
                        .structs
                        .iter()
                        .map(|(n, s)| format!("{} {n}", if s.union { "union" } else { "struct" }))
                        .collect();
                    let mut choices: Vec<&str> = layout::C_TYPE_NAMES.to_vec();
                    choices.extend(declared.iter().map(String::as_str));
                    error = error.with_choices(given, &choices);
                }
                return error;
            }
        }
        let span = s
            .align
            .as_ref()
            .map(|a| a.span())
            .or_else(|| s.fields.first().map(|f| f.name.span()))
            .unwrap_or(0..0);
        return loaded.error_at(span, &format!("structs.{}.{}", e.owner, e.key), e.message);
    }
    if let Some(inst) = doc.instances.get(&e.owner) {
        let span = match e.key {
            "node" => inst.node.as_ref().map(|n| n.span()),
            "count" => inst.count.as_ref().map(|n| n.span()),
            "kind" => Some(inst.kind.span()),
            _ => None,
        }
        .unwrap_or_else(|| inst.struct_name.span());
        return loaded.error_at(span, &format!("instances.{}.{}", e.owner, e.key), e.message);
    }
    InputError::whole_file(&loaded.source.path, e.to_string())
}

/// The structs of a document as the layout rules take them. (A struct the
/// file imports from pahole has its `fields` already: the loader reads the
/// listing before any variant patches them.)
pub fn struct_specs(
    _loaded: &LoadedScenario,
    doc: &ScenarioDoc,
) -> Result<Vec<StructSpec>, InputError> {
    Ok(doc
        .structs
        .iter()
        .map(|(name, s)| StructSpec {
            name: name.clone(),
            align: s.align.as_ref().map(|a| narrow(*a.get_ref())),
            is_union: s.union,
            fields: field_specs(&s.fields),
        })
        .collect())
}

/// Fields as the layout rules take them, written-out members included.
fn field_specs(fields: &[schema::FieldDef]) -> Vec<FieldSpec> {
    fields
        .iter()
        .map(|f| FieldSpec {
            name: f.name.get_ref().clone(),
            ty: match (&f.fields, f.shape()) {
                (Some(inner), _) => FieldType::Inline(Box::new(StructSpec {
                    // `struct css_set` names the member's type `css_set`.
                    name: f
                        .label
                        .as_deref()
                        .map(|l| {
                            l.trim()
                                .trim_start_matches("struct")
                                .trim_start_matches("union")
                                .trim()
                                .to_string()
                        })
                        .unwrap_or_default(),
                    align: None,
                    is_union: f.union.as_ref().is_some_and(|u| *u.get_ref()),
                    fields: field_specs(inner),
                })),
                (None, Some(FieldShape::Type(t))) => FieldType::Named(t.get_ref().clone()),
                (None, Some(FieldShape::Size(s))) => FieldType::Bytes(narrow(*s.get_ref())),
                (None, None) => FieldType::Bytes(1),
            },
            count: narrow(f.count()),
            align: f.align.as_ref().map(|a| narrow(*a.get_ref())),
            offset: f.offset.as_ref().map(|o| narrow(*o.get_ref())),
            anonymous: f.anonymous.as_ref().is_some_and(|a| *a.get_ref()),
            bit_field: f.bits.as_ref().map(|b| BitField {
                bit_offset: f.bit_offset.as_ref().map_or(0, |o| narrow(*o.get_ref())),
                bits: narrow(*b.get_ref()),
            }),
            type_label: if f.fields.is_none() {
                f.label.clone()
            } else {
                None
            },
        })
        .collect()
}

/// A size, offset, alignment or count as the layout rules take it. The
/// document checks have bounded each (a struct's size, an instance's
/// elements) before this; a value past `u32` would saturate, never wrap
/// into a small wrong one.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
