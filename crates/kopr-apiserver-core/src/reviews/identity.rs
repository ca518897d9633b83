//! Who a credential belongs to: SelfSubjectReview (`kubectl auth whoami`)
//! and TokenReview (`authentication.k8s.io/v1`).

use serde_json::{Value, json};

use super::{Review, created};
use crate::status::ApiError;

/// SelfSubjectReview: the requesting user.
pub(super) fn self_subject(review: &Review<'_>, mut body: Value) -> Value {
    body["status"] = json!({"userInfo": review.user.to_json()});
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
    let audiences = crate::object::string_list(&body["spec"]["audiences"]);
    body["status"] = match review.authentication.authenticate_token(&token, &audiences) {
        Ok((user, audiences)) => json!({
            "authenticated": true,
            "user": user.to_json(),
            "audiences": audiences,
        }),
        Err(why) => json!({"user": {}, "error": why.0}),
    };
    Ok(created(body))
}
