//! Who a request acts as: kube's `user.Info` and the users and groups the
//! server gives meaning to. Authentication finds it, impersonation may
//! change it, and authorization, admission, the registry and audit read it;
//! it sits below all of them.

use std::collections::BTreeMap;

/// The user a request was authenticated as (kube's `user.Info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// A unique id, if the authenticator has one.
    pub uid: String,
    /// The groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// Further attributes (a service-account token's pod and credential id).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The user as kube's APIs show it (`status.userInfo` of a
    /// SelfSubjectReview, `user` of audit events): username, then uid,
    /// groups and extra when present.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("username".into(), self.name.clone().into());
        if !self.uid.is_empty() {
            out.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            out.insert("groups".into(), serde_json::json!(self.groups));
        }
        if !self.extra.is_empty() {
            out.insert("extra".into(), serde_json::json!(self.extra));
        }
        serde_json::Value::Object(out)
    }

    /// The anonymous user.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        }
    }
}

/// The group whose members may do everything.
pub const MASTERS_GROUP: &str = "system:masters";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of requests without credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
