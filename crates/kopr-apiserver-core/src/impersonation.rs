//! Impersonation: a request may act as another user through the
//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers (`kubectl --as`, `--as-group`), when
//! the requesting user is authorized to `impersonate` each of them, as
//! kube-apiserver's impersonation filter does between authentication and
//! authorization.

use std::collections::BTreeMap;

use http::HeaderMap;

use crate::authn::service_account;
use crate::authz::{Attributes, Decision, Union, forbidden};
use crate::identity::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, UserInfo};
use crate::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Whether a request asks to impersonate anyone.
pub fn requested(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|k| k.as_str().starts_with("impersonate-"))
}

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The `impersonate` check of one thing to act as.
fn attributes(
    group: &str,
    resource: &str,
    subresource: Option<&str>,
    namespace: Option<&str>,
    name: &str,
) -> Attributes {
    let mut a = Attributes::for_resource(
        "impersonate",
        group,
        resource,
        subresource,
        namespace,
        Some(name),
    );
    if let Some(r) = a.resource.as_mut() {
        r.version.clear();
    }
    a
}

/// The user `requestor` acts as, after checking that it may impersonate
/// every header's value; `requestor` itself when nothing is asked.
///
/// # Errors
/// 403 Forbidden for the first impersonation not allowed, in kube's
/// words; 500 for groups, extras or a uid asked without a user (as
/// kube-apiserver 1.32 answers).
pub fn impersonate(
    requestor: UserInfo,
    headers: &HeaderMap,
    uri: &str,
    authorizer: &Union,
) -> Result<UserInfo, ApiError> {
    if !requested(headers) {
        return Ok(requestor);
    }
    let user = headers
        .get(USER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let groups = values(headers, GROUP);
    let uid = headers.get(UID).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let (Some(key), Ok(v)) = (name.as_str().strip_prefix(EXTRA_PREFIX), value.to_str()) {
            let key = percent_decode(key);
            extra.entry(key).or_default().push(v.to_string());
        }
    }
    let mut checks = Vec::new();
    let service_account = service_account::split_user_name(user);
    if user.is_empty() {
        if groups.is_empty() && extra.is_empty() && uid.is_empty() {
            return Ok(requestor);
        }
        return Err(ApiError::new(
            500,
            "InternalError",
            format!(
                "Internal Server Error: {uri:?}: requested impersonation of groups, extras or a uid without impersonating a user"
            ),
        ));
    }
    match service_account {
        Some((ns, name)) => checks.push(attributes("", "serviceaccounts", None, Some(ns), name)),
        None => checks.push(attributes("", "users", None, None, user)),
    }
    for g in &groups {
        checks.push(attributes("", "groups", None, None, g));
    }
    for (key, vals) in &extra {
        for v in vals {
            checks.push(attributes(
                "authentication.k8s.io",
                "userextras",
                Some(key),
                None,
                v,
            ));
        }
    }
    if !uid.is_empty() {
        checks.push(attributes("authentication.k8s.io", "uids", None, None, uid));
    }
    for check in &checks {
        match authorizer.decide(&requestor, check) {
            Decision::Allow(_) => {}
            Decision::Deny(why) | Decision::NoOpinion(why) => {
                return Err(forbidden(&requestor, check, &why));
            }
        }
    }
    let mut acting_groups: Vec<String> = if groups.is_empty() {
        match service_account {
            Some((ns, _)) => service_account::groups(ns)
                .into_iter()
                .filter(|g| g != AUTHENTICATED_GROUP)
                .collect(),
            None => Vec::new(),
        }
    } else {
        groups.iter().map(|g| g.to_string()).collect()
    };
    if user == ANONYMOUS_USER {
        if !acting_groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
            acting_groups.push(UNAUTHENTICATED_GROUP.into());
        }
    } else if !acting_groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
    {
        acting_groups.push(AUTHENTICATED_GROUP.into());
    }
    Ok(UserInfo {
        name: user.to_string(),
        uid: uid.to_string(),
        groups: acting_groups,
        extra,
    })
}

/// `%XX` escapes decoded, as Go's `url.PathUnescape` (the raw key when an
/// escape is malformed).
fn percent_decode(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_unescaped_as_go_does() {
        assert_eq!(percent_decode("scopes"), "scopes");
        assert_eq!(percent_decode("example.com%2fkey"), "example.com/key");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
    }
}
