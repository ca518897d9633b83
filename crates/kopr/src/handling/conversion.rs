//! CRD versions: a custom resource's hub version (its storage version, the type its
//! handlers receive) and the other versions it is served at, each converted to and from the
//! hub with the author's `TryFrom` impls, as controller-runtime's Hub/Convertible.
//! The operator's webhook server answers the API server's ConversionReviews with them
//! ([`Resource::version`](crate::Resource::version)).
//!
//! A version that cannot express some of the hub's fields would lose them on a trip hub →
//! version → hub (a v1 Book with one `author` written back over a v2 Book with two
//! `authors`). The framework keeps them: when converting from the hub loses something, the
//! hub's content goes into the annotation [`STASH_ANNOTATION`] of the converted object; when
//! that object comes back, every part the client left as it was is taken from the stash,
//! and every part it changed from its own conversion.

use std::collections::BTreeSet;
use std::fmt::Display;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The annotation that carries, on an object converted from the hub, the hub's fields its
/// version cannot express: each top-level field (`spec`, `status`, …) a trip through the
/// version would change, as JSON.
pub const STASH_ANNOTATION: &str = "kopr.dev/conversion-stash";

type ConvertFn = Arc<dyn Fn(Value) -> Result<Value, String> + Send + Sync>;

/// One version besides the hub, and how it converts.
#[derive(Clone)]
pub(crate) struct Spoke {
    /// The version (`v1`).
    pub version: String,
    to_hub: ConvertFn,
    from_hub: ConvertFn,
}

/// The versions of one custom resource and their conversions, erased over their types.
#[derive(Clone)]
pub struct Conversions {
    /// The CRD's name (`books.example.com`).
    pub(crate) crd: String,
    /// The API group.
    pub(crate) group: String,
    /// The hub (storage) version.
    pub(crate) hub: String,
    pub(crate) spokes: Vec<Spoke>,
}

impl std::fmt::Debug for Conversions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spokes: Vec<&str> = self.spokes.iter().map(|s| s.version.as_str()).collect();
        f.debug_struct("Conversions")
            .field("crd", &self.crd)
            .field("hub", &self.hub)
            .field("spokes", &spokes)
            .finish()
    }
}

/// Reads an object as `T`, naming where it does not fit.
fn read<T: DeserializeOwned>(object: Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(object).map_err(|error| {
        let path = error.path().to_string();
        match path.as_str() {
            "." => error.into_inner().to_string(),
            _ => format!("{path}: {}", error.into_inner()),
        }
    })
}

/// The conversion from `A`'s JSON to `B`'s through `B: TryFrom<A>`.
fn converter<A, B>() -> ConvertFn
where
    A: DeserializeOwned + 'static,
    B: TryFrom<A> + Serialize + 'static,
    B::Error: Display,
{
    Arc::new(|object: Value| {
        let a: A = read(object)?;
        let b = B::try_from(a).map_err(|e| e.to_string())?;
        serde_json::to_value(b).map_err(|e| e.to_string())
    })
}

fn version_of(object: &Value) -> &str {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    api_version.rsplit('/').next().unwrap_or("")
}

/// An object's content: all but `apiVersion`, `kind` and `metadata`.
fn content(object: &Value) -> Map<String, Value> {
    let mut map = object.as_object().cloned().unwrap_or_default();
    for field in ["apiVersion", "kind", "metadata"] {
        map.remove(field);
    }
    map
}

fn with_content(object: &Value, content: &Map<String, Value>) -> Value {
    let mut map = Map::new();
    for field in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = object.get(field) {
            map.insert(field.into(), v.clone());
        }
    }
    map.extend(content.clone());
    Value::Object(map)
}

/// Removes and returns the stash annotation of `object` (and the annotations, when it was
/// the only one).
fn take_stash(object: &mut Value) -> Option<Map<String, Value>> {
    let meta = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let text = annotations.remove(STASH_ANNOTATION)?;
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    serde_json::from_str(text.as_str()?).ok()
}

fn put_stash(object: &mut Value, stash: &Map<String, Value>) -> Result<(), String> {
    let text = serde_json::to_string(stash).map_err(|e| e.to_string())?;
    let Some(meta) = object.as_object_mut().map(|o| {
        o.entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()))
    }) else {
        return Err("the converted object is not an object".into());
    };
    let Some(meta) = meta.as_object_mut() else {
        return Err("the converted object's metadata is not an object".into());
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    match annotations.as_object_mut() {
        Some(a) => {
            a.insert(STASH_ANNOTATION.into(), Value::String(text));
            Ok(())
        }
        None => Err("the converted object's annotations are not an object".into()),
    }
}

/// Three-way merge: the parts of `new` equal to `base` (the client left them as converted)
/// become `stash`'s; the parts the client changed stay.
fn merge3(new: Option<Value>, base: Option<&Value>, stash: Option<&Value>) -> Option<Value> {
    if new.as_ref() == base {
        return stash.cloned();
    }
    match (new, base, stash) {
        (Some(Value::Object(mut n)), Some(Value::Object(b)), Some(Value::Object(s))) => {
            let keys: BTreeSet<String> =
                n.keys().chain(b.keys()).chain(s.keys()).cloned().collect();
            for key in keys {
                let merged = merge3(n.remove(&key), b.get(&key), s.get(&key));
                if let Some(v) = merged {
                    n.insert(key, v);
                }
            }
            Some(Value::Object(n))
        }
        (new, _, _) => new,
    }
}

/// The review versions the webhook server answers, in the order the API server is to pick.
pub(crate) const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Sets a multi-version CRD's `spec.conversion` to the operator's webhook at `client` (a
/// `clientConfig`). Without one (no [`Webhooks`] set), the Service `kopr-webhooks` in
/// `default` stands in; `manifests` names the operator's own. The `caBundle` is registered
/// by the webhook server when it starts, or injected by cert-manager.
///
/// Never `strategy: None`: objects written at another version meanwhile would be stored
/// unconverted. Until the webhook answers, such writes fail instead.
///
/// [`Webhooks`]: crate::webhooks::Webhooks
pub(crate) fn set_conversion(
    crd: &mut k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    client: Option<Value>,
) {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let client = client.unwrap_or_else(|| {
        serde_json::json!({"service": {"namespace": "default", "name": "kopr-webhooks",
            "path": format!("/convert/{name}"), "port": 443}})
    });
    let conversion = serde_json::json!({"strategy": "Webhook", "webhook": {
        "clientConfig": client, "conversionReviewVersions": REVIEW_VERSIONS}});
    crd.spec.conversion = serde_json::from_value(conversion).ok();
}

impl Conversions {
    /// The conversions of the hub `H`, with no other version yet.
    pub(crate) fn of<H: kube::CustomResourceExt>() -> Conversions {
        let crd = H::crd();
        Conversions {
            crd: crd.metadata.name.unwrap_or_default(),
            group: crd.spec.group,
            hub: crd
                .spec
                .versions
                .first()
                .map(|v| v.name.clone())
                .unwrap_or_default(),
            spokes: Vec::new(),
        }
    }

    /// Adds the version `S`, converted to and from the hub `H`.
    pub(crate) fn add<H, S>(&mut self, version: &str)
    where
        H: TryFrom<S> + Serialize + DeserializeOwned + 'static,
        S: TryFrom<H> + Serialize + DeserializeOwned + 'static,
        <H as TryFrom<S>>::Error: Display,
        <S as TryFrom<H>>::Error: Display,
    {
        self.spokes.retain(|s| s.version != version);
        self.spokes.push(Spoke {
            version: version.to_owned(),
            to_hub: converter::<S, H>(),
            from_hub: converter::<H, S>(),
        });
    }

    fn spoke(&self, version: &str) -> Result<&Spoke, String> {
        self.spokes
            .iter()
            .find(|s| s.version == version)
            .ok_or_else(|| {
                format!(
                    "{} has no version {version} (it serves {})",
                    self.crd,
                    self.versions().join(", ")
                )
            })
    }

    /// The hub first, then the other versions.
    pub(crate) fn versions(&self) -> Vec<String> {
        std::iter::once(self.hub.clone())
            .chain(self.spokes.iter().map(|s| s.version.clone()))
            .collect()
    }

    /// Converts one object to the `desired` apiVersion (`group/version`), through the hub.
    ///
    /// # Errors
    /// The author's conversion error, or why the object does not read as its version's type.
    pub fn convert(&self, object: Value, desired: &str) -> Result<Value, String> {
        let target = desired
            .strip_prefix(&format!("{}/", self.group))
            .ok_or_else(|| format!("{desired} is not a version of {}", self.crd))?;
        if version_of(&object) == target {
            return Ok(object);
        }
        let hub = self.to_hub(object)?;
        self.out_of_hub(hub, target)
    }

    fn to_hub(&self, mut object: Value) -> Result<Value, String> {
        let version = version_of(&object).to_owned();
        if version == self.hub {
            return Ok(object);
        }
        let spoke = self.spoke(&version)?;
        let stash = take_stash(&mut object);
        let mut hub = (spoke.to_hub)(object)?;
        if let Some(stash) = stash {
            // What this version made of the stashed hub: the client's changes are the
            // differences from it.
            let mut before = content(&hub);
            before.extend(stash.clone());
            let base = content(&(spoke.to_hub)((spoke.from_hub)(with_content(
                &hub, &before,
            ))?)?);
            let mut merged = content(&hub);
            for (field, kept) in &stash {
                match merge3(merged.remove(field), base.get(field), Some(kept)) {
                    Some(v) => merged.insert(field.clone(), v),
                    None => None,
                };
            }
            hub = with_content(&hub, &merged);
        }
        Ok(hub)
    }

    fn out_of_hub(&self, mut hub: Value, version: &str) -> Result<Value, String> {
        take_stash(&mut hub);
        if version == self.hub {
            return Ok(hub);
        }
        let spoke = self.spoke(version)?;
        let mut out = (spoke.from_hub)(hub.clone())?;
        take_stash(&mut out);
        // The hub's top-level fields (`spec`, `status`) a trip through this version changes.
        let back = content(&(spoke.to_hub)(out.clone())?);
        let kept: Map<String, Value> = content(&hub)
            .into_iter()
            .filter(|(field, value)| back.get(field) != Some(value))
            .collect();
        if !kept.is_empty() {
            put_stash(&mut out, &kept)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conversions() -> Conversions {
        // v2 (hub): a list of authors; v1: one author.
        let to_hub: ConvertFn = Arc::new(|mut o: Value| {
            let author = o["spec"]["author"].take();
            o["apiVersion"] = json!("example.com/v2");
            o["spec"]["authors"] = json!([author]);
            o["spec"].as_object_mut().map(|s| s.remove("author"));
            Ok(o)
        });
        let from_hub: ConvertFn = Arc::new(|mut o: Value| {
            let first = o["spec"]["authors"][0].clone();
            if first.is_null() {
                return Err("a v1 Book needs an author".into());
            }
            o["apiVersion"] = json!("example.com/v1");
            o["spec"]["author"] = first;
            o["spec"].as_object_mut().map(|s| s.remove("authors"));
            Ok(o)
        });
        Conversions {
            crd: "books.example.com".into(),
            group: "example.com".into(),
            hub: "v2".into(),
            spokes: vec![Spoke {
                version: "v1".into(),
                to_hub,
                from_hub,
            }],
        }
    }

    fn v2(authors: Value) -> Value {
        json!({"apiVersion": "example.com/v2", "kind": "Book", "metadata": {"name": "b"},
               "spec": {"title": "T", "authors": authors}})
    }

    #[test]
    fn a_lossless_trip_leaves_no_stash() {
        let c = conversions();
        let v1 = c.convert(v2(json!(["Ann"])), "example.com/v1");
        assert_eq!(
            v1,
            Ok(
                json!({"apiVersion": "example.com/v1", "kind": "Book", "metadata": {"name": "b"},
                            "spec": {"title": "T", "author": "Ann"}})
            )
        );
    }

    #[test]
    fn what_a_version_cannot_express_survives_the_trip() {
        let c = conversions();
        let v1 = c
            .convert(v2(json!(["Ann", "Bo"])), "example.com/v1")
            .unwrap_or_default();
        assert_eq!(v1["spec"]["author"], "Ann");
        assert!(v1["metadata"]["annotations"][STASH_ANNOTATION].is_string());
        // Unchanged, or with another field changed: both authors come back.
        assert_eq!(
            c.convert(v1.clone(), "example.com/v2"),
            Ok(v2(json!(["Ann", "Bo"])))
        );
        let mut retitled = v1.clone();
        retitled["spec"]["title"] = json!("T2");
        let back = c.convert(retitled, "example.com/v2").unwrap_or_default();
        assert_eq!(
            back["spec"],
            json!({"title": "T2", "authors": ["Ann", "Bo"]})
        );
        assert!(
            back["metadata"]
                .get("annotations")
                .is_none_or(|a| a.get(STASH_ANNOTATION).is_none())
        );
        // The author the client changed is its own.
        let mut changed = v1;
        changed["spec"]["author"] = json!("Cy");
        let back = c.convert(changed, "example.com/v2").unwrap_or_default();
        assert_eq!(back["spec"]["authors"], json!(["Cy"]));
    }

    #[test]
    fn errors_are_the_authors_and_unknown_versions_are_named() {
        let c = conversions();
        assert_eq!(
            c.convert(v2(json!([])), "example.com/v1"),
            Err("a v1 Book needs an author".into())
        );
        assert_eq!(
            c.convert(v2(json!(["A"])), "example.com/v3"),
            Err("books.example.com has no version v3 (it serves v2, v1)".into())
        );
        assert_eq!(
            c.convert(v2(json!(["A"])), "other.com/v1"),
            Err("other.com/v1 is not a version of books.example.com".into())
        );
    }
}
