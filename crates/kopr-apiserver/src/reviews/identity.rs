//! Who a credential belongs to: SelfSubjectReview (`kubectl auth whoami`)
//! and TokenReview (`authentication.k8s.io/v1`).

use serde_json::{Map, Value, json};

use super::{Review, created};
use crate::authn::UserInfo;
use crate::status::ApiError;

/// A user as `status.userInfo` / `status.user` shows it.
fn user_info(user: &UserInfo) -> Value {
    let mut out = Map::new();
    out.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        out.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        out.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        out.insert("extra".into(), json!(user.extra));
    }
    Value::Object(out)
}

/// SelfSubjectReview: the requesting user.
pub(super) fn self_subject(review: &Review<'_>, mut body: Value) -> Value {
    body["status"] = json!({"userInfo": user_info(review.user)});
    created(body)
}

/// TokenReview: the user of `spec.token` for `spec.audiences`.
pub(super) fn token_review(review: &Review<'_>, mut body: Value) -> Result<Value, ApiError> {
    let token = body["spec"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = super::strings(&body["spec"]["audiences"]);
    body["status"] = match review.authentication.authenticate_token(&token, &audiences) {
        Ok((user, audiences)) => json!({
            "authenticated": true,
            "user": user_info(&user),
            "audiences": audiences,
        }),
        Err(why) => json!({"user": {}, "error": why.0}),
    };
    Ok(created(body))
}
