//! The audit policy (`audit.k8s.io/v1` Policy, `--audit-policy-file`): rules
//! tried in order, the first that matches a request giving its level; no
//! match is level `None`, as in kube-apiserver.

use serde::Deserialize;

use crate::authz::Attributes;
use crate::identity::UserInfo;

/// How much of a request is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Default)]
pub enum Level {
    /// Nothing.
    #[default]
    None,
    /// Who did what to which object, and the answer's code.
    Metadata,
    /// Metadata and the request's body.
    Request,
    /// Metadata and the request's and response's bodies.
    RequestResponse,
}

impl Level {
    /// The level's name in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// The resources of a rule: a group and some of its resources.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group ("" for core).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*/status`, `*`); none: all of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; none: any.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of a policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// The level of matching requests.
    pub level: Level,
    /// User names; none: any.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups, one of which the user must be in; none: any.
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs; none: any.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources; none: any resource request.
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces ("" for cluster-scoped); none: any.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource URLs (`/healthz*`); none: any non-resource request.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not logged for matching requests.
    #[serde(default)]
    pub omit_stages: Vec<String>,
}

/// A policy document.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// The rules, in order.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Stages never logged.
    #[serde(default)]
    pub omit_stages: Vec<String>,
}

/// Why a text is not an `audit.k8s.io/v1` Policy.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Neither YAML nor JSON.
    #[error("{0}")]
    Yaml(Box<serde_saphyr::Error>),
    /// Another kind, or another version.
    #[error("expected kind Policy of apiVersion audit.k8s.io/v1")]
    NotPolicy,
    /// A Policy whose fields do not read.
    #[error("{0}")]
    Fields(#[from] serde_json::Error),
}

/// Errors reading a policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("audit policy {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a Policy.
    #[error("audit policy {path}: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        #[source]
        why: ParseError,
    },
}

fn any_or(list: &[String], wanted: impl Fn(&str) -> bool) -> bool {
    list.is_empty() || list.iter().any(|v| wanted(v))
}

impl Rule {
    fn matches(&self, user: &UserInfo, a: &Attributes) -> bool {
        let users = any_or(&self.users, |u| u == user.name);
        let groups = any_or(&self.user_groups, |g| user.in_group(g));
        let verbs = any_or(&self.verbs, |v| v == a.verb);
        if !(users && groups && verbs) {
            return false;
        }
        match &a.resource {
            Some(r) => {
                if !self.non_resource_urls.is_empty() {
                    return false;
                }
                let ns = r.namespace.as_deref().unwrap_or("");
                let namespaces = any_or(&self.namespaces, |n| n == ns);
                let resources = self.resources.is_empty()
                    || self.resources.iter().any(|g| {
                        g.group == r.group
                            && resource_matches(&g.resources, &r.resource, r.subresource.as_deref())
                            && any_or(&g.resource_names, |n| Some(n) == r.name.as_deref())
                    });
                namespaces && resources
            }
            None => {
                self.resources.is_empty()
                    && self.namespaces.is_empty()
                    && any_or(&self.non_resource_urls, |u| {
                        u == a.path
                            || u.strip_suffix('*')
                                .is_some_and(|prefix| a.path.starts_with(prefix))
                    })
            }
        }
    }
}

/// kube's audit matching of a rule's resources: `*`, `pods`, `pods/log`,
/// `*/status` and `pods/*`.
fn resource_matches(list: &[String], resource: &str, subresource: Option<&str>) -> bool {
    if list.is_empty() {
        return true;
    }
    let combined = match subresource {
        Some(s) => format!("{resource}/{s}"),
        None => resource.to_string(),
    };
    list.iter().any(|r| {
        r == "*"
            || *r == combined
            || subresource.is_some_and(|s| {
                r.strip_prefix("*/") == Some(s) || r.strip_suffix("/*") == Some(resource)
            })
    })
}

impl Policy {
    /// Reads a policy file (YAML or JSON).
    ///
    /// # Errors
    /// [`PolicyError`] when it cannot be read or is not a Policy.
    pub fn read(path: &std::path::Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Policy::parse(&text).map_err(|why| PolicyError::Invalid {
            path: path.display().to_string(),
            why,
        })
    }

    /// Parses a policy document.
    ///
    /// # Errors
    /// Why the text is not an `audit.k8s.io/v1` Policy.
    pub fn parse(text: &str) -> Result<Policy, ParseError> {
        let value: serde_json::Value =
            serde_saphyr::from_str(text).map_err(|e| ParseError::Yaml(Box::new(e)))?;
        if value["kind"] != "Policy" || value["apiVersion"] != "audit.k8s.io/v1" {
            return Err(ParseError::NotPolicy);
        }
        Ok(serde_json::from_value(value)?)
    }

    /// Every request at `Metadata`: the policy of an audit log given no
    /// policy file.
    pub fn metadata_for_all() -> Policy {
        Policy {
            rules: vec![Rule {
                level: Level::Metadata,
                users: Vec::new(),
                user_groups: Vec::new(),
                verbs: Vec::new(),
                resources: Vec::new(),
                namespaces: Vec::new(),
                non_resource_urls: Vec::new(),
                omit_stages: Vec::new(),
            }],
            omit_stages: Vec::new(),
        }
    }

    /// The level of a request and the stages its rule omits.
    pub fn level_of(&self, user: &UserInfo, a: &Attributes) -> (Level, Vec<String>) {
        match self.rules.iter().find(|r| r.matches(user, a)) {
            Some(rule) => {
                let mut omit = self.omit_stages.clone();
                omit.extend(rule.omit_stages.iter().cloned());
                (rule.level, omit)
            }
            None => (Level::None, self.omit_stages.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str, group: &str, resource: &str, sub: Option<&str>, ns: &str) -> Attributes {
        Attributes::for_resource(verb, group, resource, sub, Some(ns), None)
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
             - level: None\n  verbs: [watch]\n\
             - level: Metadata\n  resources: [{group: \"\", resources: [secrets]}]\n\
             - level: RequestResponse\n  resources: [{group: apps, resources: [\"*/scale\"]}]\n\
             - level: None\n  nonResourceURLs: [\"/healthz*\"]\n\
             - level: Request\n",
        )
        .expect("policy");
        let user = UserInfo::default();
        let level = |a: &Attributes| policy.level_of(&user, a).0;
        assert_eq!(
            level(&request("watch", "", "secrets", None, "a")),
            Level::None
        );
        assert_eq!(
            level(&request("get", "", "secrets", None, "a")),
            Level::Metadata
        );
        assert_eq!(
            level(&request(
                "update",
                "apps",
                "deployments",
                Some("scale"),
                "a"
            )),
            Level::RequestResponse
        );
        assert_eq!(
            level(&request("get", "", "pods", None, "a")),
            Level::Request
        );
        let health = Attributes {
            verb: "get".into(),
            resource: None,
            path: "/healthz/ready".into(),
        };
        assert_eq!(level(&health), Level::None);
        assert_eq!(
            policy
                .level_of(&user, &request("get", "", "pods", None, "a"))
                .1,
            ["RequestReceived"]
        );
        assert!(Policy::parse("kind: Other\n").is_err());
    }
}
