//! The CRD model: the internal type as kube validates it, read from the v1
//! object (versions, schema, subresources, printer columns, conversion).

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Model (the internal type, after v1 conversion).

#[derive(Default)]
pub(super) struct Validation<'a> {
    pub(super) openapi: Option<Schema<'a>>,
}

#[derive(Default)]
pub(super) struct Scale<'a> {
    pub(super) spec_replicas_path: &'a str,
    pub(super) status_replicas_path: &'a str,
    pub(super) label_selector_path: Option<&'a str>,
}

#[derive(Default)]
pub(super) struct Subresources<'a> {
    pub(super) status: bool,
    pub(super) scale: Option<Scale<'a>>,
}

#[derive(Default)]
pub(super) struct Column<'a> {
    pub(super) name: &'a str,
    pub(super) type_: &'a str,
    pub(super) format: &'a str,
    pub(super) description: &'a str,
    pub(super) priority: i64,
    pub(super) json_path: &'a str,
}

#[derive(Default)]
pub(super) struct Version<'a> {
    pub(super) name: &'a str,
    pub(super) served: bool,
    pub(super) storage: bool,
    pub(super) deprecated: bool,
    pub(super) deprecation_warning: Option<&'a str>,
    pub(super) schema: Option<Validation<'a>>,
    pub(super) subresources: Option<Subresources<'a>>,
    pub(super) columns: Option<Vec<Column<'a>>>,
    pub(super) selectable: Option<Vec<&'a str>>,
    pub(super) raw: Option<&'a Obj>,
}

pub(super) struct Service<'a> {
    pub(super) name: &'a str,
    pub(super) namespace: &'a str,
    pub(super) path: Option<&'a str>,
    pub(super) port: i64,
}

pub(super) struct ClientConfig<'a> {
    pub(super) url: Option<&'a str>,
    pub(super) service: Option<Service<'a>>,
}

pub(super) struct Conversion<'a> {
    pub(super) strategy: &'a str,
    pub(super) client_config: Option<ClientConfig<'a>>,
    pub(super) review_versions: Option<Vec<&'a str>>,
}

#[derive(Default)]
pub(super) struct Spec<'a> {
    pub(super) group: &'a str,
    pub(super) names: Names,
    pub(super) scope: &'a str,
    pub(super) versions: Vec<Version<'a>>,
    pub(super) versions_nil: bool,
    pub(super) validation: Option<Validation<'a>>,
    pub(super) subresources: Option<Subresources<'a>>,
    pub(super) columns: Option<Vec<Column<'a>>>,
    pub(super) selectable: Option<Vec<&'a str>>,
    pub(super) conversion: Option<Conversion<'a>>,
    pub(super) preserve_unknown_fields: bool,
}

pub(super) struct Crd<'a> {
    pub(super) name: &'a str,
    pub(super) generate_name: &'a str,
    pub(super) approval_annotation: Option<&'a str>,
    pub(super) spec: Spec<'a>,
    pub(super) accepted_names: Names,
    pub(super) stored_versions: Vec<&'a str>,
    pub(super) established: bool,
}

/// Semantic equality of two optional JSON values: `null`, missing and `[]`
/// are the same (nil and empty slices compare equal in kube).
pub(super) fn sem_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn is_nilish(v: Option<&Value>) -> bool {
        matches!(v, None | Some(Value::Null)) || matches!(v, Some(Value::Array(a)) if a.is_empty())
    }
    if is_nilish(a) && is_nilish(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.keys().chain(y.keys()).all(|k| sem_eq(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| sem_eq(Some(p), Some(q)))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

pub(super) fn parse_subresources<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Subresources<'a> {
    let status = ck.obj(o, "status", path).is_some();
    let scale = ck.obj(o, "scale", path).map(|s| {
        let p = child(path, "scale");
        Scale {
            spec_replicas_path: ck.string(s, "specReplicasPath", &p),
            status_replicas_path: ck.string(s, "statusReplicasPath", &p),
            label_selector_path: ck.str(s, "labelSelectorPath", &p),
        }
    });
    Subresources { status, scale }
}

pub(super) fn parse_columns<'a>(
    ck: &mut Checker,
    o: &'a Obj,
    path: &str,
) -> Option<Vec<Column<'a>>> {
    ck.arr(o, "additionalPrinterColumns", path)?;
    let p = child(path, "additionalPrinterColumns");
    Some(
        ck.obj_items(o, "additionalPrinterColumns", path)
            .into_iter()
            .map(|(i, c)| {
                let cp = index(&p, i);
                Column {
                    name: ck.string(c, "name", &cp),
                    type_: ck.string(c, "type", &cp),
                    format: ck.string(c, "format", &cp),
                    description: ck.string(c, "description", &cp),
                    priority: ck.i32(c, "priority", &cp).unwrap_or(0),
                    json_path: ck.string(c, "jsonPath", &cp),
                }
            })
            .collect(),
    )
}

pub(super) fn parse_selectable<'a>(
    ck: &mut Checker,
    o: &'a Obj,
    path: &str,
) -> Option<Vec<&'a str>> {
    ck.arr(o, "selectableFields", path)?;
    let p = child(path, "selectableFields");
    Some(
        ck.obj_items(o, "selectableFields", path)
            .into_iter()
            .map(|(i, s)| ck.string(s, "jsonPath", &index(&p, i)))
            .collect(),
    )
}

pub(super) fn parse_validation<'a>(ck: &mut Checker, o: &'a Obj, path: &str) -> Validation<'a> {
    Validation {
        openapi: ck
            .obj(o, "openAPIV3Schema", path)
            .map(|s| Schema::parse(ck, s, &child(path, "openAPIV3Schema"))),
    }
}

impl<'a> Crd<'a> {
    pub(super) fn parse(ck: &mut Checker, root: &'a Obj) -> Crd<'a> {
        let empty: &'static Obj = empty_obj();
        let meta = ck.obj(root, "metadata", "").unwrap_or(empty);
        let ann = ck.obj(meta, "annotations", "metadata");
        let approval_annotation = ann
            .and_then(|a| a.get(names::API_APPROVED_ANNOTATION))
            .and_then(Value::as_str);
        let spec_o = ck.obj(root, "spec", "").unwrap_or(empty);
        let spec = Spec::parse(ck, spec_o);
        let status = root.get("status").and_then(Value::as_object);
        let accepted_names = Names::from_json(status.and_then(|s| s.get("acceptedNames")));
        let stored_versions = status
            .and_then(|s| s.get("storedVersions"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let established = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Established")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        Crd {
            name: meta.get("name").and_then(Value::as_str).unwrap_or(""),
            generate_name: meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or(""),
            approval_annotation,
            spec,
            accepted_names,
            stored_versions,
            established,
        }
    }
}

pub(super) fn empty_obj() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

pub(super) fn names_from_obj(ck: &mut Checker, o: Option<&Obj>, path: &str) -> Names {
    let Some(o) = o else {
        return Names::default();
    };
    let own = |v: &str| v.to_string();
    Names {
        plural: own(ck.string(o, "plural", path)),
        singular: own(ck.string(o, "singular", path)),
        short_names: ck
            .str_list(o, "shortNames", path)
            .into_iter()
            .map(own)
            .collect(),
        kind: own(ck.string(o, "kind", path)),
        list_kind: own(ck.string(o, "listKind", path)),
        categories: ck
            .str_list(o, "categories", path)
            .into_iter()
            .map(own)
            .collect(),
    }
}

impl<'a> Spec<'a> {
    pub(super) fn parse(ck: &mut Checker, o: &'a Obj) -> Spec<'a> {
        let p = "spec";
        let names_o = ck.obj(o, "names", p);
        let mut spec = Spec {
            group: ck.string(o, "group", p),
            names: names_from_obj(ck, names_o, "spec.names"),
            scope: ck.string(o, "scope", p),
            preserve_unknown_fields: ck.bool(o, "preserveUnknownFields", p).unwrap_or(false),
            versions_nil: ck.arr(o, "versions", p).is_none(),
            ..Spec::default()
        };
        for (i, v) in ck.obj_items(o, "versions", p) {
            let vp = index("spec.versions", i);
            let mut ver = Version {
                name: ck.string(v, "name", &vp),
                served: ck.bool(v, "served", &vp).unwrap_or(false),
                storage: ck.bool(v, "storage", &vp).unwrap_or(false),
                deprecated: ck.bool(v, "deprecated", &vp).unwrap_or(false),
                deprecation_warning: ck.str(v, "deprecationWarning", &vp),
                raw: Some(v),
                ..Version::default()
            };
            ver.schema = ck
                .obj(v, "schema", &vp)
                .map(|s| parse_validation(ck, s, &child(&vp, "schema")));
            ver.subresources = ck
                .obj(v, "subresources", &vp)
                .map(|s| parse_subresources(ck, s, &child(&vp, "subresources")));
            ver.columns = parse_columns(ck, v, &vp);
            ver.selectable = parse_selectable(ck, v, &vp);
            spec.versions.push(ver);
        }
        if let Some(c) = ck.obj(o, "conversion", p) {
            let cp = "spec.conversion";
            let webhook = ck.obj(c, "webhook", cp);
            let wp = "spec.conversion.webhook";
            let client_config = webhook
                .and_then(|w| ck.obj(w, "clientConfig", wp))
                .map(|cc| {
                    let ccp = "spec.conversion.webhook.clientConfig";
                    let service = ck.obj(cc, "service", ccp).map(|s| {
                        let sp = "spec.conversion.webhook.clientConfig.service";
                        Service {
                            name: ck.string(s, "name", sp),
                            namespace: ck.string(s, "namespace", sp),
                            path: ck.str(s, "path", sp),
                            port: ck.i32(s, "port", sp).unwrap_or(443),
                        }
                    });
                    let _ = ck.str(cc, "caBundle", ccp);
                    ClientConfig {
                        url: ck.str(cc, "url", ccp),
                        service,
                    }
                });
            let review_versions = webhook.and_then(|w| {
                ck.arr(w, "conversionReviewVersions", wp)
                    .map(|_| ck.str_list(w, "conversionReviewVersions", wp))
            });
            spec.conversion = Some(Conversion {
                strategy: ck.string(c, "strategy", cp),
                client_config,
                review_versions,
            });
        }
        spec.hoist();
        spec
    }

    /// The v1 -> internal conversion: identical per-version fields move to
    /// the spec.
    pub(super) fn hoist(&mut self) {
        let Some(first) = self.versions.first().and_then(|v| v.raw) else {
            return;
        };
        let same = |f: &str| {
            self.versions
                .iter()
                .all(|v| sem_eq(v.raw.and_then(|r| r.get(f)), first.get(f)))
        };
        let (sub, sch, col, sel) = (
            same("subresources"),
            same("schema"),
            same("additionalPrinterColumns"),
            same("selectableFields"),
        );
        let mut vs = std::mem::take(&mut self.versions);
        if let Some(v0) = vs.first_mut() {
            if sub {
                self.subresources = v0.subresources.take();
            }
            if sch {
                self.validation = v0.schema.take();
            }
            if col {
                self.columns = v0.columns.take();
            }
            if sel {
                self.selectable = v0.selectable.take();
            }
        }
        for v in vs.iter_mut() {
            if sub {
                v.subresources = None;
            }
            if sch {
                v.schema = None;
            }
            if col {
                v.columns = None;
            }
            if sel {
                v.selectable = None;
            }
        }
        self.versions = vs;
    }

    pub(super) fn schemas(&self) -> impl Iterator<Item = &Schema<'a>> {
        self.validation
            .iter()
            .chain(self.versions.iter().filter_map(|v| v.schema.as_ref()))
            .filter_map(|v| v.openapi.as_ref())
    }

    pub(super) fn has_schema_with(&self, f: &mut dyn FnMut(&Schema<'a>) -> bool) -> bool {
        self.schemas().any(|s| s.any(f))
    }

    pub(super) fn all_versions_specify_schema(&self) -> bool {
        if self
            .validation
            .as_ref()
            .is_some_and(|v| v.openapi.is_some())
        {
            return true;
        }
        self.versions
            .iter()
            .all(|v| v.schema.as_ref().is_some_and(|s| s.openapi.is_some()))
    }
}
