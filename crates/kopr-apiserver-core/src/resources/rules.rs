//! A resource's rules, whichever defines them: a built-in kind's
//! [`KindDef`](super::kind::KindDef) or a custom resource's CRD version. The
//! stages ask the [`ResourceType`]; only this module tells the two apart for
//! tables, field selectors and merge rules.

use serde_json::Value;

use super::ResourceType;
use crate::patch::schema::MergeSchema;
use crate::selectors::{FieldSelector, field_value};
use crate::status::ApiError;
use crate::table::{self, IncludeObject};

impl ResourceType {
    /// Objects as a Table (`as=Table`): the kind's printer, or a CRD
    /// version's `additionalPrinterColumns`.
    pub fn table(
        &self,
        objects: &[Value],
        include: IncludeObject,
        headers: bool,
        list_meta: Value,
        now: jiff::Timestamp,
    ) -> Value {
        if let Some(custom) = &self.custom {
            return crate::crd::printer::table(custom, objects, include, headers, list_meta, now);
        }
        let printer = self
            .def
            .map_or(table::Printer::Default, |d| d.table_printer());
        table::table_with_headers(printer, objects, include, headers, list_meta, now)
    }

    /// A field selector, checked against the labels the resource is
    /// selectable by (converted to their canonical names for a built-in kind).
    ///
    /// # Errors
    /// kube's 400s: a selector that does not parse, a label not supported.
    pub fn field_selector(&self, s: &str) -> Result<FieldSelector, ApiError> {
        let bad = |e: crate::selectors::SelectorError| ApiError::bad_request(e.to_string());
        match &self.custom {
            Some(custom) => {
                let f = FieldSelector::parse(s).map_err(bad)?;
                check_custom_labels(&f, &custom.selectable_fields)?;
                Ok(f)
            }
            None => FieldSelector::parse(s)
                .and_then(|f| f.convert_for(self.field_labels()))
                .map_err(bad),
        }
    }

    /// The value of a field label of an object, as selectors compare it.
    pub fn field_value(&self, obj: &Value, label: &str) -> Option<String> {
        match &self.custom {
            Some(_) => match crate::crd::value_at(obj, label) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Null) | None => Some(String::new()),
                Some(other) => Some(other.to_string()),
            },
            None => field_value(self.field_labels(), obj, label).flatten(),
        }
    }

    /// The list and map semantics of strategic merge and server-side apply:
    /// the built-in type's merge rules, or the CRD's structural schema.
    pub fn merge_schema(&self) -> Box<dyn MergeSchema + '_> {
        match &self.custom {
            Some(custom) => Box::new(crate::crd::StructuralMergeSchema(&custom.schema)),
            None => Box::new(crate::merge::apply_schema(&self.api_version(), &self.kind)),
        }
    }
}

/// A custom resource is selectable by its name, namespace and its CRD's
/// `selectableFields`.
fn check_custom_labels(f: &FieldSelector, selectable: &[String]) -> Result<(), ApiError> {
    let allowed: Vec<String> = ["metadata.name", "metadata.namespace"]
        .into_iter()
        .map(str::to_string)
        .chain(
            selectable
                .iter()
                .map(|p| p.trim_start_matches('.').to_string()),
        )
        .collect();
    for label in f.fields() {
        if !allowed.iter().any(|a| a == label) {
            let list = allowed
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ApiError::bad_request(format!(
                "\"{label}\" is not a known field selector: only {list}"
            )));
        }
    }
    Ok(())
}
