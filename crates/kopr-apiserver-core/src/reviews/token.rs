//! TokenRequest: `POST serviceaccounts/<name>/token` issues a bound
//! service-account token (`kubectl create token`), with kube's defaults
//! (one hour, the API server's audience) and limits (ten minutes at
//! least), optionally bound to a Pod or Secret of the namespace.

use serde_json::{Value, json};

use crate::authn::service_account::{BoundObject, ServiceAccountTokens, TokenSpec};
use crate::registry::{Api, Target};
use crate::resources::kind::Known;
use crate::status::ApiError;
use crate::validation::FieldError;

/// The lifetime of a token whose request names none.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

async fn lookup(api: &Api, plural: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let rt = api
        .catalog
        .get("", "v1", plural)
        .ok_or_else(ApiError::path_not_found)?;
    let target = Target {
        rt,
        namespace: Some(namespace.to_string()),
        name: Some(name.to_string()),
    };
    Ok((*api.get(&target).await?).clone())
}

fn invalid(name: &str, errors: Vec<FieldError>) -> ApiError {
    crate::registry::invalid_of("authentication.k8s.io", "TokenRequest", name, &errors)
}

fn uid_of(obj: &Value) -> String {
    obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The object a request binds the token to, checked against the store.
async fn bound_object(
    api: &Api,
    namespace: &str,
    service_account: &str,
    reference: &Value,
) -> Result<(Option<BoundObject>, Option<BoundObject>), ApiError> {
    if reference.is_null() {
        return Ok((None, None));
    }
    let kind = reference["kind"].as_str().unwrap_or_default();
    let name = reference["name"].as_str().unwrap_or_default();
    let plural = match kind {
        "Pod" => "pods",
        "Secret" => "secrets",
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {service_account:?} to object of kind {kind:?}"
            )));
        }
    };
    let obj = lookup(api, plural, namespace, name).await?;
    let runs_as = obj["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or("default");
    if kind == "Pod" && runs_as != service_account {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {service_account:?} to pod running with different serviceaccount name."
        )));
    }
    let uid = uid_of(&obj);
    if let Some(wanted) = reference["uid"].as_str().filter(|u| !u.is_empty())
        && wanted != uid
    {
        return Err(ApiError::conflict(
            crate::status::ResourceRef {
                group: "",
                resource: plural,
            },
            name,
            &format!(
                "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let mut node = None;
    if let Some(node_name) = obj["spec"]["nodeName"].as_str().filter(|_| kind == "Pod")
        && let Some(node_rt) = api.catalog.known(Known::Nodes)
    {
        let target = Target {
            rt: node_rt,
            namespace: None,
            name: Some(node_name.to_string()),
        };
        if let Ok(n) = api.get(&target).await {
            node = Some(BoundObject {
                kind: "Node".into(),
                name: node_name.to_string(),
                uid: uid_of(&n),
            });
        }
    }
    let bound = BoundObject {
        kind: kind.to_string(),
        name: name.to_string(),
        uid,
    };
    Ok((Some(bound), node))
}

/// Issues a token for the service account `name` of `namespace` as the
/// TokenRequest `body` asks, answering the request with its status.
///
/// # Errors
/// 404 when the service account (or bound object) does not exist, 422
/// for a lifetime under ten minutes, 400 for another kind of bound object.
pub async fn request_token(
    api: &Api,
    tokens: &ServiceAccountTokens,
    namespace: &str,
    name: &str,
    mut body: Value,
) -> Result<Value, ApiError> {
    for (field, wanted, what) in [
        ("name", name, "name"),
        ("namespace", namespace, "namespace"),
    ] {
        if let Some(given) = body["metadata"][field].as_str().filter(|g| !g.is_empty())
            && given != wanted
        {
            return Err(invalid(
                name,
                vec![FieldError::invalid(
                    format!("metadata.{field}"),
                    json!(given),
                    format!("must match the service account {what} if specified"),
                )],
            ));
        }
    }
    let sa = lookup(api, "serviceaccounts", namespace, name).await?;
    let spec = &body["spec"];
    let expiration = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let mut errors = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    } else if expiration > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !errors.is_empty() {
        return Err(invalid("", errors));
    }
    let audiences = crate::object::string_list(&spec["audiences"]);
    let (bound, node) = bound_object(api, namespace, name, &spec["boundObjectRef"]).await?;
    let token_spec = TokenSpec {
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: uid_of(&sa),
        audiences: if audiences.is_empty() {
            tokens.api_audiences().to_vec()
        } else {
            audiences.clone()
        },
        expiration_seconds: expiration,
        bound,
        node,
    };
    let (token, exp) = tokens
        .issue(&token_spec)
        .ok_or_else(|| ApiError::internal("signing the token failed"))?;
    let expires = jiff::Timestamp::from_second(exp)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    body["apiVersion"] = json!("authentication.k8s.io/v1");
    body["kind"] = json!("TokenRequest");
    body["metadata"] = json!({
        "name": name,
        "namespace": namespace,
        "creationTimestamp": crate::object::now_rfc3339(),
    });
    body["spec"]["audiences"] = json!(token_spec.audiences);
    body["spec"]["expirationSeconds"] = json!(expiration);
    if body["spec"]["boundObjectRef"].is_null() {
        body["spec"]["boundObjectRef"] = Value::Null;
    }
    body["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(body)
}
