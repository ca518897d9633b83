//! Finding how the API server serves a resource: its plural, scope and subresources, by
//! group/version/plural or by kind, singular or short name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};
use kube::api::ApiResource;

/// How the resource is named before discovery confirms it.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Group, version and plural are known.
    Known(ApiResource),
    /// A kind, plural, singular or short name to look up through discovery.
    Lookup(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Known(ar) if ar.group.is_empty() => write!(f, "{}/{}", ar.version, ar.plural),
            Target::Known(ar) => write!(f, "{}/{}/{}", ar.group, ar.version, ar.plural),
            Target::Lookup(name) => f.write_str(name),
        }
    }
}

/// A resource as the server serves it.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Group, version, kind and plural.
    pub api_resource: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether `/status` is a separate subresource.
    pub status_subresource: bool,
}

fn from_entry(group: &str, version: &str, entry: &APIResource, list: &APIResourceList) -> Resolved {
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let status_name = format!("{}/status", entry.name);
    Resolved {
        api_resource: ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version,
            kind: entry.kind.clone(),
            plural: entry.name.clone(),
        },
        namespaced: entry.namespaced,
        status_subresource: list.resources.iter().any(|r| r.name == status_name),
    }
}

/// The resources of one group-version: `None` when the server does not serve it (404); other
/// failures (an unreachable server, say) are errors, not a missing resource.
async fn resources_of(
    client: &kube::Client,
    group: &str,
    version: &str,
) -> Result<Option<APIResourceList>, kube::Error> {
    let result = if group.is_empty() {
        client.list_core_api_resources(version).await
    } else {
        client
            .list_api_group_resources(&format!("{group}/{version}"))
            .await
    };
    match result {
        Ok(list) => Ok(Some(list)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

fn matches_name(entry: &APIResource, name: &str) -> bool {
    if entry.name.contains('/') {
        return false;
    }
    entry.name == name
        || entry.kind == name
        || entry.singular_name == name
        || entry.kind.eq_ignore_ascii_case(name)
        || entry
            .short_names
            .as_ref()
            .is_some_and(|s| s.iter().any(|n| n == name))
}

/// Looks the target up. `Ok(None)` means "not served (yet)": the caller retries, so an operator
/// started before its CRD picks the resource up once the CRD is established.
pub(crate) async fn resolve(
    client: &kube::Client,
    target: &Target,
) -> Result<Option<Resolved>, kube::Error> {
    match target {
        Target::Known(ar) => {
            let Some(list) = resources_of(client, &ar.group, &ar.version).await? else {
                return Ok(None);
            };
            Ok(list
                .resources
                .iter()
                .find(|r| r.name == ar.plural)
                .map(|entry| from_entry(&ar.group, &ar.version, entry, &list)))
        }
        Target::Lookup(name) => {
            let (name, group_filter) = match name.split_once('.') {
                Some((n, g)) => (n, Some(g)),
                None => (name.as_str(), None),
            };
            let mut candidates: Vec<(String, String)> = Vec::new();
            if group_filter.is_none() {
                for version in client.list_core_api_versions().await?.versions {
                    candidates.push((String::new(), version));
                }
            }
            for group in client.list_api_groups().await?.groups {
                if group_filter.is_some_and(|g| g != group.name) {
                    continue;
                }
                let preferred = group
                    .preferred_version
                    .map(|v| v.version)
                    .or_else(|| group.versions.first().map(|v| v.version.clone()));
                if let Some(version) = preferred {
                    candidates.push((group.name.clone(), version));
                }
            }
            for (group, version) in candidates {
                let Some(list) = resources_of(client, &group, &version).await? else {
                    continue;
                };
                if let Some(entry) = list.resources.iter().find(|r| matches_name(r, name)) {
                    return Ok(Some(from_entry(&group, &version, entry, &list)));
                }
            }
            Ok(None)
        }
    }
}
