//! Content negotiation: what representation the Accept header asks for.

/// What the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// Plain JSON objects.
    Json,
    /// meta.k8s.io/v1 Table.
    Table,
    /// apidiscovery.k8s.io/v2 aggregated discovery.
    AggregatedDiscovery,
    /// meta.k8s.io PartialObjectMetadata (its version: `v1` or `v1beta1`): objects with only
    /// their metadata, as client-go's metadata client and kube-rs's `*_metadata` calls ask.
    PartialMetadata(&'static str),
    /// meta.k8s.io PartialObjectMetadataList (its version).
    PartialMetadataList(&'static str),
    /// Nothing the Accept header lists can be served (an unknown `as=`, say): kube answers
    /// 406 NotAcceptable to a resource request.
    Unacceptable,
}

/// The media types a resource answer can take, as kube's 406 lists them.
pub const ACCEPTED_MEDIA_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

impl Representation {
    /// The meta.k8s.io version of a partial-metadata representation.
    pub fn partial_version(self) -> Option<&'static str> {
        match self {
            Representation::PartialMetadata(v) | Representation::PartialMetadataList(v) => Some(v),
            _ => None,
        }
    }
}

/// Reads the Accept header; the first acceptable alternative wins, and a header without
/// one is [`Representation::Unacceptable`].
pub fn representation(accept: Option<&str>) -> Representation {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Representation::Json;
    };
    for alt in accept.split(',') {
        let mut params = alt.split(';').map(str::trim);
        let media = params.next().unwrap_or("").to_ascii_lowercase();
        if !matches!(
            media.as_str(),
            "application/json"
                | "*/*"
                | "application/*"
                | "application/yaml"
                | "application/vnd.kubernetes.protobuf"
        ) {
            continue;
        }
        let (mut as_, mut g, mut v) = ("", "", "");
        for p in params {
            match p.split_once('=') {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        match (as_, g, v) {
            ("", _, _) => return Representation::Json,
            ("Table", "meta.k8s.io", "v1") => return Representation::Table,
            ("PartialObjectMetadata", "meta.k8s.io", v @ ("v1" | "v1beta1")) => {
                return Representation::PartialMetadata(meta_version(v));
            }
            ("PartialObjectMetadataList", "meta.k8s.io", v @ ("v1" | "v1beta1")) => {
                return Representation::PartialMetadataList(meta_version(v));
            }
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2") => {
                return Representation::AggregatedDiscovery;
            }
            _ => continue,
        }
    }
    Representation::Unacceptable
}

fn meta_version(v: &str) -> &'static str {
    if v == "v1" { "v1" } else { "v1beta1" }
}

/// An object as meta.k8s.io PartialObjectMetadata of `version`: its metadata alone.
pub fn partial_metadata(object: &serde_json::Value, version: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_headers() {
        assert_eq!(
            representation(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            )),
            Representation::Table
        );
        assert_eq!(
            representation(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Representation::AggregatedDiscovery
        );
        assert_eq!(
            representation(Some(
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"
            )),
            Representation::Json
        );
        assert_eq!(representation(None), Representation::Json);
        assert_eq!(representation(Some("")), Representation::Json);
        assert_eq!(
            representation(Some("application/json;as=Bogus;g=meta.k8s.io;v=v1")),
            Representation::Unacceptable
        );
        assert_eq!(
            representation(Some(
                "application/json;as=Bogus;g=meta.k8s.io;v=v1, application/json"
            )),
            Representation::Json
        );
        assert_eq!(
            representation(Some("text/html")),
            Representation::Unacceptable
        );
        assert_eq!(
            representation(Some(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            )),
            Representation::PartialMetadataList("v1")
        );
        assert_eq!(
            representation(Some(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            )),
            Representation::PartialMetadata("v1")
        );
    }
}
