//! Validation of a CRD's spec, versions, schemas, subresources, printer
//! columns and selectable fields, with kube-apiserver's paths and messages.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Validation.

pub(super) struct VOpts {
    pub(super) allow_defaults: bool,
    pub(super) require_recognized_review_version: bool,
    pub(super) require_immutable_names: bool,
    pub(super) require_openapi_schema: bool,
    pub(super) require_valid_property_type: bool,
    pub(super) require_structural: bool,
    pub(super) require_pruned_defaults: bool,
    pub(super) require_atomic_set_type: bool,
    pub(super) require_map_list_keys: bool,
}

impl VOpts {
    pub(super) fn for_create() -> VOpts {
        VOpts {
            allow_defaults: true,
            require_recognized_review_version: true,
            require_immutable_names: false,
            require_openapi_schema: true,
            require_valid_property_type: true,
            require_structural: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys: true,
        }
    }

    /// Ratcheting: checks the old object already fails are not tightened.
    pub(super) fn for_update(old: &Crd<'_>) -> VOpts {
        let spec = &old.spec;
        let crv_ok = spec.conversion.as_ref().is_none_or(|c| {
            c.review_versions
                .as_ref()
                .is_none_or(|v| v.is_empty() || v.iter().any(|x| matches!(*x, "v1" | "v1beta1")))
        });
        VOpts {
            allow_defaults: true,
            require_recognized_review_version: crv_ok,
            require_immutable_names: old.established,
            require_openapi_schema: spec.all_versions_specify_schema(),
            require_valid_property_type: !spec.has_schema_with(&mut |s| {
                !s.type_.is_empty() && !openapi::OPENAPI_V3_TYPES.contains(&s.type_)
            }),
            require_structural: !spec.schemas().any(|s| !structural::is_structural(s)),
            require_pruned_defaults: !spec.schemas().any(structural::has_unpruned_defaults),
            require_atomic_set_type: !spec.has_schema_with(&mut has_non_atomic_set),
            require_map_list_keys: !spec
                .has_schema_with(&mut |s| !openapi::map_list_keys_map_set(s, "").is_empty()),
        }
    }
}

pub(super) fn has_non_atomic_set(s: &Schema<'_>) -> bool {
    if s.x_list_type != Some("set") {
        return false;
    }
    match s.items_schema() {
        Some(is) if is.type_ == "array" => is.x_list_type.is_some_and(|t| t != "atomic"),
        Some(is) if is.type_ == "object" => is.x_map_type != Some("atomic"),
        _ => false,
    }
}

pub(super) fn validate_meta_create(root: &Obj, crd: &Crd<'_>) -> Vec<FieldError> {
    let (plural, group) = (crd.spec.names.plural.as_str(), crd.spec.group);
    let mut errs = Vec::new();
    if !crd.generate_name.is_empty() {
        for m in names::crd_name_errors(crd.generate_name, true, plural, group) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                crd.generate_name,
                m,
            ));
        }
    }
    if !crd.name.is_empty() {
        for m in names::crd_name_errors(crd.name, false, plural, group) {
            errs.push(FieldError::invalid("metadata.name", crd.name, m));
        }
    }
    let mut mck = Checker::default();
    metadata::validate_object_meta(&mut mck, root, false, |_, _| Vec::new(), false);
    errs.extend(mck.errs);
    errs
}

pub(super) fn versions_repr(spec: &Spec<'_>) -> Value {
    let ty = "apiextensions.CustomResourceDefinitionVersion";
    if spec.versions_nil && spec.versions.is_empty() {
        return go_repr(format!("[]{ty}(nil)"));
    }
    let parts: Vec<String> = spec
        .versions
        .iter()
        .map(|v| {
            let cols = match &v.columns {
                None => "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string(),
                Some(c) => format!(
                    "[]apiextensions.CustomResourceColumnDefinition{{{}}}",
                    c.iter()
                        .map(|c| format!(
                            "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
                            q(c.name), q(c.type_), q(c.format), q(c.description), c.priority, q(c.json_path)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let sel = match &v.selectable {
                None => "[]apiextensions.SelectableField(nil)".to_string(),
                Some(s) => format!(
                    "[]apiextensions.SelectableField{{{}}}",
                    s.iter()
                        .map(|p| format!("apiextensions.SelectableField{{JSONPath:{}}}", q(p)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!(
                "{ty}{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{cols}, SelectableFields:{sel}}}",
                q(v.name),
                v.served,
                v.storage,
                v.deprecated,
                gorepr::ptr("string", v.deprecation_warning.is_some()),
                gorepr::ptr("apiextensions.CustomResourceValidation", v.schema.is_some()),
                gorepr::ptr("apiextensions.CustomResourceSubresources", v.subresources.is_some()),
            )
        })
        .collect();
    go_repr(format!("[]{ty}{{{}}}", parts.join(", ")))
}

pub(super) fn q(s: &str) -> String {
    crate::validation::go_quote(s)
}

/// `ValidateCustomResourceDefinitionSpec`: errors go to `errs`, in kube's order.
pub(super) fn validate_spec(
    spec: &Spec<'_>,
    opts: &VOpts,
    hooks: Hooks<'_>,
    errs: &mut Vec<FieldError>,
) {
    names::validate_group(spec.group, errs);
    match spec.scope {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    if spec
        .validation
        .as_ref()
        .and_then(|v| v.openapi.as_ref())
        .is_none()
    {
        validate_version_schemas_present(spec, opts, errs);
    }
    let sopts = schema_opts(spec, opts, hooks, errs);
    validate_versions(spec, &sopts, errs);
    for (f, v) in [
        ("plural", &spec.names.plural),
        ("singular", &spec.names.singular),
        ("kind", &spec.names.kind),
        ("listKind", &spec.names.list_kind),
    ] {
        if v.is_empty() {
            errs.push(FieldError::required(child("spec.names", f), ""));
        }
    }
    names::validate_names(&spec.names, "spec.names", errs);
    let any_status = spec.subresources.as_ref().is_some_and(|s| s.status)
        || spec
            .versions
            .iter()
            .any(|v| v.subresources.as_ref().is_some_and(|s| s.status));
    validate_validation(
        spec.validation.as_ref(),
        any_status,
        &sopts,
        "spec.validation",
        errs,
    );
    if let Some(s) = &spec.subresources {
        validate_subresources(s, "spec.subresources", errs);
    }
    for (i, c) in spec.columns.iter().flatten().enumerate() {
        validate_column(c, &index("spec.additionalPrinterColumns", i), errs);
    }
    if let Some(sel) = spec.selectable.as_ref().filter(|s| !s.is_empty()) {
        validate_top_selectable(spec, sel, errs);
    }
    if let Some(c) = &spec.conversion {
        if c.strategy != "None" && spec.preserve_unknown_fields {
            errs.push(FieldError::invalid(
                "spec.conversion.strategy",
                c.strategy,
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        validate_conversion(c, opts.require_recognized_review_version, errs);
    }
}

/// Without a top-level schema, each version needs its own (or, when schemas
/// are optional, each served version that would otherwise be pruned empty).
fn validate_version_schemas_present(spec: &Spec<'_>, opts: &VOpts, errs: &mut Vec<FieldError>) {
    for (i, v) in spec.versions.iter().enumerate() {
        let missing = v.schema.as_ref().is_none_or(|s| s.openapi.is_none());
        let p = child(
            &child(&index("spec.versions", i), "schema"),
            "openAPIV3Schema",
        );
        if opts.require_openapi_schema {
            if missing {
                errs.push(FieldError::required(p, "schemas are required"));
            }
        } else if !spec.preserve_unknown_fields && v.served && missing {
            errs.push(FieldError::required(
                p,
                "because otherwise all fields are pruned",
            ));
        }
    }
}

/// The options schemas are validated with: structural schemas are required
/// when asked, without preserveUnknownFields, or when defaults or
/// structural-only extensions are used (defaults also need
/// preserveUnknownFields false).
fn schema_opts<'h>(
    spec: &Spec<'_>,
    opts: &VOpts,
    hooks: Hooks<'h>,
    errs: &mut Vec<FieldError>,
) -> SchemaOpts<'h> {
    let mut require_structural = opts.require_structural || !spec.preserve_unknown_fields;
    if opts.allow_defaults && spec.has_schema_with(&mut |s| s.default.is_some()) {
        require_structural = true;
        if spec.preserve_unknown_fields {
            errs.push(FieldError::invalid(
                "spec.preserveUnknownFields",
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if spec.has_schema_with(&mut |s| {
        s.x_embedded
            || s.x_preserve.is_some()
            || s.x_int_or_string
            || s.x_list_map_keys.as_ref().is_some_and(|k| !k.is_empty())
            || s.x_list_type.is_some()
            || !s.x_validations.is_empty()
    }) {
        require_structural = true;
    }
    SchemaOpts {
        base: Opts {
            allow_defaults: opts.allow_defaults,
            disallow_defaults_reason: String::new(),
            inside_resource_meta: false,
            require_valid_property_type: opts.require_valid_property_type,
            require_atomic_set_type: opts.require_atomic_set_type,
            require_map_list_keys_map_set_validation: opts.require_map_list_keys,
        },
        require_structural,
        require_pruned_defaults: opts.require_pruned_defaults,
        hooks,
    }
}

/// `spec.versions`: each version, unique names, exactly one storage
/// version, and `spec.version` (the first version's name).
fn validate_versions(spec: &Spec<'_>, sopts: &SchemaOpts<'_>, errs: &mut Vec<FieldError>) {
    let mut storage_count = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    let per_version_sub = spec.versions.iter().any(|v| v.subresources.is_some());
    for (i, v) in spec.versions.iter().enumerate() {
        if v.storage {
            storage_count += 1;
        }
        if seen.contains(&v.name) {
            unique = false;
        } else {
            seen.push(v.name);
        }
        let vp = index("spec.versions", i);
        let e = is_dns1035_label(v.name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(child(&vp, "name"), v.name, e.join(",")));
        }
        let sub = if per_version_sub {
            v.subresources.as_ref()
        } else {
            spec.subresources.as_ref()
        };
        validate_version(v, &vp, sub.is_some_and(|s| s.status), sopts, errs);
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_repr(spec),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_repr(spec),
            "must have exactly one version marked as storage version",
        ));
    }
    // spec.version is versions[0].name after conversion.
    if let Some(v0) = spec.versions.first()
        && !v0.name.is_empty()
    {
        let e = is_dns1035_label(v0.name);
        if !e.is_empty() {
            errs.push(FieldError::invalid("spec.version", v0.name, e.join(",")));
        }
    }
}

/// Top-level `spec.selectableFields`: only with a top-level (structural)
/// schema.
fn validate_top_selectable(spec: &Spec<'_>, sel: &[&str], errs: &mut Vec<FieldError>) {
    match &spec.validation {
        None => errs.push(FieldError::invalid(
            "spec.selectableFields",
            "",
            "selectableFields may only be set when validations.schema is included",
        )),
        Some(v) => {
            let schema = v.openapi.as_ref();
            if let Some(e) = schema.and_then(structural::new_structural_error) {
                errs.push(FieldError::invalid("spec.schema.openAPIV3Schema", "", e));
            }
            validate_selectable(sel, schema, "spec.selectableFields", errs);
        }
    }
}

pub(super) struct SchemaOpts<'h> {
    pub(super) base: Opts,
    pub(super) require_structural: bool,
    pub(super) require_pruned_defaults: bool,
    pub(super) hooks: Hooks<'h>,
}

pub(super) fn validate_version(
    v: &Version<'_>,
    vp: &str,
    status_enabled: bool,
    sopts: &SchemaOpts<'_>,
    errs: &mut Vec<FieldError>,
) {
    for m in deprecation_warning_errors(v.deprecated, v.deprecation_warning) {
        errs.push(FieldError::invalid(
            child(vp, "deprecationWarning"),
            v.deprecation_warning.unwrap_or(""),
            m,
        ));
    }
    validate_validation(
        v.schema.as_ref(),
        status_enabled,
        sopts,
        &child(vp, "schema"),
        errs,
    );
    if let Some(s) = &v.subresources {
        validate_subresources(s, &child(vp, "subresources"), errs);
    }
    for (i, c) in v.columns.iter().flatten().enumerate() {
        validate_column(c, &index(&child(vp, "additionalPrinterColumns"), i), errs);
    }
    if let Some(sel) = v.selectable.as_ref().filter(|s| !s.is_empty()) {
        let sp = child(vp, "selectableFields");
        match v.schema.as_ref().and_then(|s| s.openapi.as_ref()) {
            None => errs.push(FieldError::invalid(
                sp,
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(schema) => {
                if let Some(e) = structural::new_structural_error(schema) {
                    errs.push(FieldError::invalid(child(vp, "schema.openAPIV3Schema"), "", e));
                }
                validate_selectable(sel, Some(schema), &sp, errs);
            }
        }
    }
}

pub(super) fn is_print(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

pub(super) fn deprecation_warning_errors(deprecated: bool, w: Option<&str>) -> Vec<String> {
    let Some(w) = w else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".to_string());
    }
    if w.is_empty() {
        out.push("must not be an empty string".to_string());
    }
    if let Some((i, _)) = w.char_indices().find(|(_, c)| !is_print(*c)) {
        out.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    out
}

pub(super) fn validate_validation(
    v: Option<&Validation<'_>>,
    status_enabled: bool,
    sopts: &SchemaOpts<'_>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let Some(schema) = v.and_then(|v| v.openapi.as_ref()) else {
        return;
    };
    let mut errs = Vec::new();
    let sp = child(path, "openAPIV3Schema");
    if status_enabled {
        for f in schema.set_fields() {
            if f == "Type" {
                if schema.type_ != "object" {
                    errs.push(FieldError::invalid(
                        child(path, "openAPIV3Schema.type"),
                        schema.type_,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(&f) {
                errs.push(FieldError::invalid(
                    &sp,
                    go_repr(gorepr::schema_props(schema)),
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.nullable {
        errs.push(FieldError::forbidden(
            child(path, "openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut cel_enabled = false;
    let mut init_errs = Vec::new();
    if sopts.require_structural {
        if let Some(e) = structural::new_structural_error(schema) {
            init_errs.push(FieldError::invalid(&sp, "", e));
        } else {
            let se = structural::validate_structural(&sp, schema);
            if !se.is_empty() {
                errs.extend(se);
            } else {
                let de = structural::validate_defaults(
                    &sp,
                    schema,
                    sopts.require_pruned_defaults,
                    sopts.hooks.default_value,
                );
                if !de.is_empty() {
                    errs.extend(de);
                } else {
                    cel_enabled = true;
                }
            }
        }
    }
    // Without a hook, the rules are compiled here once for the whole schema
    // (the CEL types of a node depend on its place in it); the walk below
    // picks each node's errors where kube would compile that node.
    let compiled = match (sopts.hooks.cel, schema.raw) {
        (None, Some(raw)) if cel_enabled => {
            crate::crd::cel::CelValidator::check(&Value::Object(raw.clone()), &sp)
        }
        _ => Vec::new(),
    };
    let builtin = |path: &str, _: &Value| rule_errors_at(&compiled, path);
    let hook: Option<CelHook<'_>> = match sopts.hooks.cel {
        Some(h) => Some(h),
        None => Some(&builtin),
    };
    let mut oe = openapi::Errors::default();
    openapi::validate(schema, &sp, &sopts.base, true, cel_enabled, hook, &mut oe);
    errs.extend(oe.schema);
    errs.extend(oe.cel);
    if errs.is_empty() {
        errs.extend(init_errs);
    }
    out.extend(errs);
}

/// The errors of `errs` about the `x-kubernetes-validations` of the schema
/// node at `path`: compile errors of rules and messageExpressions, misused
/// `optionalOldSelf`/`oldSelf`, and errors of the list itself. The rule
/// shape errors (message, reason, fieldPath) are the OpenAPI walk's own.
pub(super) fn rule_errors_at(errs: &[FieldError], path: &str) -> Vec<FieldError> {
    let base = child(path, "x-kubernetes-validations");
    errs.iter()
        .filter(|e| {
            let Some(rest) = e.field.strip_prefix(base.as_str()) else {
                return false;
            };
            if rest.is_empty() {
                return true;
            }
            let Some(after) = rest
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .map(|(_, after)| after)
            else {
                return false;
            };
            match after {
                ".rule" => e.kind != crate::validation::FieldErrorKind::Required,
                ".messageExpression" => e.kind != crate::validation::FieldErrorKind::Required,
                ".optionalOldSelf" => true,
                _ => false,
            }
        })
        .cloned()
        .collect()
}

pub(super) fn simple_json_path(s: &str, path: &str, errs: &mut Vec<FieldError>) -> bool {
    if s.is_empty() {
        errs.push(FieldError::invalid(path, s, "must not be empty"));
        false
    } else if !s.starts_with('.') {
        errs.push(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ));
        false
    } else {
        true
    }
}

pub(super) fn validate_subresources(s: &Subresources<'_>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(sc) = &s.scale else {
        return;
    };
    let sp = child(path, "scale.specReplicasPath");
    if sc.spec_replicas_path.is_empty() {
        errs.push(FieldError::required(sp, ""));
    } else if simple_json_path(sc.spec_replicas_path, &sp, errs)
        && !sc.spec_replicas_path.starts_with(".spec.")
    {
        errs.push(FieldError::invalid(
            sp,
            sc.spec_replicas_path,
            "should be a json path under .spec",
        ));
    }
    let tp = child(path, "scale.statusReplicasPath");
    if sc.status_replicas_path.is_empty() {
        errs.push(FieldError::required(tp, ""));
    } else if simple_json_path(sc.status_replicas_path, &tp, errs)
        && !sc.status_replicas_path.starts_with(".status.")
    {
        errs.push(FieldError::invalid(
            tp,
            sc.status_replicas_path,
            "should be a json path under .status",
        ));
    }
    if let Some(l) = sc.label_selector_path.filter(|l| !l.is_empty()) {
        let lp = child(path, "scale.labelSelectorPath");
        if simple_json_path(l, &lp, errs) && !l.starts_with(".spec.") && !l.starts_with(".status.")
        {
            errs.push(FieldError::invalid(
                lp,
                l,
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

pub(super) fn validate_column(c: &Column<'_>, path: &str, errs: &mut Vec<FieldError>) {
    if c.name.is_empty() {
        errs.push(FieldError::required(child(path, "name"), ""));
    }
    let types = format!("must be one of {}", PRINTER_COLUMN_TYPES.join(","));
    if c.type_.is_empty() {
        errs.push(FieldError::required(child(path, "type"), types));
    } else if !PRINTER_COLUMN_TYPES.contains(&c.type_) {
        errs.push(FieldError::invalid(child(path, "type"), c.type_, types));
    }
    if !c.format.is_empty() && !PRINTER_COLUMN_FORMATS.contains(&c.format) {
        errs.push(FieldError::invalid(
            child(path, "format"),
            c.format,
            format!("must be one of {}", PRINTER_COLUMN_FORMATS.join(",")),
        ));
    }
    let jp = child(path, "JSONPath");
    if c.json_path.is_empty() {
        errs.push(FieldError::required(jp, ""));
    } else {
        simple_json_path(c.json_path, &jp, errs);
    }
}

pub(super) fn validate_selectable(
    fields: &[&str],
    schema: Option<&Schema<'_>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut unique: Vec<String> = Vec::new();
    for (i, jp) in fields.iter().enumerate() {
        let p = child(&index(path, i), "jsonPath");
        if jp.is_empty() {
            errs.push(FieldError::required(p, ""));
            continue;
        }
        let fp = match openapi::valid_field_path(jp, schema, false) {
            Ok(fp) => fp,
            Err(e) => {
                errs.push(FieldError::invalid(
                    p,
                    *jp,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if fp.elems.first().is_some_and(|(n, _)| n == "metadata") {
            errs.push(FieldError::invalid(
                &p,
                *jp,
                "must not point to fields in metadata",
            ));
        }
        if !fp
            .schema
            .is_some_and(|s| matches!(s.type_, "string" | "boolean" | "integer"))
        {
            errs.push(FieldError::invalid(
                &p,
                *jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let rendered = fp.render();
        if unique.contains(&rendered) {
            errs.push(FieldError::duplicate(p, *jp));
        } else {
            unique.push(rendered);
        }
    }
    let n = i64::try_from(unique.len()).unwrap_or(i64::MAX);
    if n > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(path, Some(n), MAX_SELECTABLE_FIELDS));
    }
}
