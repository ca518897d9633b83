//! Authentication: who a request comes from, from its credentials. The
//! server knows one credential today, its admin bearer token, whose user is
//! `kopr-admin` in the group `system:masters`; service-account tokens and
//! other authenticators join this stage as further [`Authenticator`]s.

use std::sync::Arc;

use http::HeaderMap;
use http::header::AUTHORIZATION;

/// The user a request was authenticated as (kube's `user.Info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// A unique id, if the authenticator has one.
    pub uid: String,
    /// The groups, `system:authenticated` included.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The group whose members may do everything.
pub const MASTERS_GROUP: &str = "system:masters";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The admin token's user.
pub const ADMIN_USER: &str = "kopr-admin";

/// Finds the user a request's credentials belong to.
pub trait Authenticator: Send + Sync {
    /// The user, or `None` when the request carries no credential this
    /// authenticator accepts (the request then gets a 401).
    fn authenticate(&self, headers: &HeaderMap) -> Option<UserInfo>;
}

/// The bearer token of a request's `Authorization` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim())
}

/// Accepts the server's admin token: the user `kopr-admin` in
/// `system:masters`.
pub struct AdminToken {
    token: Arc<str>,
}

impl AdminToken {
    /// Accepts `token`.
    pub fn new(token: &str) -> AdminToken {
        AdminToken {
            token: Arc::from(token),
        }
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

impl Authenticator for AdminToken {
    fn authenticate(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let token = bearer_token(headers)?;
        constant_time_eq(token.as_bytes(), self.token.as_bytes()).then(|| UserInfo {
            name: ADMIN_USER.into(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.into(), AUTHENTICATED_GROUP.into()],
        })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, value.parse().expect("header value"));
        h
    }

    #[test]
    fn the_admin_token_is_a_master() {
        let authn = AdminToken::new("secret");
        let user = authn.authenticate(&headers("Bearer secret"));
        assert!(user.as_ref().is_some_and(|u| u.in_group(MASTERS_GROUP)));
        assert_eq!(user.map(|u| u.name), Some(ADMIN_USER.to_string()));
        assert_eq!(authn.authenticate(&headers("Bearer secreT")), None);
        assert_eq!(authn.authenticate(&headers("Basic secret")), None);
        assert_eq!(authn.authenticate(&HeaderMap::new()), None);
    }
}
