//! Service-account tokens: issuing bound tokens (TokenRequest) and
//! authenticating them, as kube's `serviceaccount` token code does. A token
//! is an ES256 JWT carrying kube's claims: issuer, audiences, expiry, the
//! subject `system:serviceaccount:<ns>:<name>` and a `kubernetes.io` claim
//! naming the namespace, the service account's uid, and the pod or secret
//! the token is bound to. It is accepted only while that service account
//! (and the bound object) exists with the same uid.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::jwt::Signer;
use super::{AUTHENTICATED_GROUP, UserInfo};
use crate::storage::Store;

/// The issuer of kopr's tokens, and the audience the API server accepts,
/// as kubeadm configures kube-apiserver.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The group of every service account.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of service-account user names.
pub const USER_PREFIX: &str = "system:serviceaccount:";

/// The user name of a service account.
pub fn user_name(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

/// The namespace and name of a service-account user name.
pub fn split_user_name(user: &str) -> Option<(&str, &str)> {
    let (ns, name) = user.strip_prefix(USER_PREFIX)?.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// The groups kube gives a service account of `namespace`.
pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        AUTHENTICATED_GROUP.to_string(),
    ]
}

/// An object a token is bound to (a Pod or a Secret), or the node of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// What a TokenRequest asks for, once validated.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account's name.
    pub name: String,
    /// The service account's uid.
    pub uid: String,
    /// The audiences (the API server's when the request names none).
    pub audiences: Vec<String>,
    /// Lifetime in seconds.
    pub expiration_seconds: i64,
    /// The pod or secret the token is bound to.
    pub bound: Option<BoundObject>,
    /// The node of a bound pod.
    pub node: Option<BoundObject>,
}

/// Issues and authenticates service-account tokens.
#[derive(Clone)]
pub struct ServiceAccountTokens {
    signer: Arc<Signer>,
    issuer: String,
    audiences: Vec<String>,
    store: Store,
    verified: Arc<VerifiedTokens>,
}

/// Tokens whose signature was verified, with their claims: checking an
/// ECDSA signature is most of a token's cost, and a client sends the same
/// token with every request. Only the signature's verdict is kept; expiry
/// and the service account (and bound object) are checked on every request,
/// so a deleted account's token stops at once. Bounded: when full, it is
/// emptied and refills.
#[derive(Default)]
struct VerifiedTokens {
    claims: std::sync::RwLock<std::collections::HashMap<String, Arc<Value>>>,
}

/// How many verified tokens are kept.
const VERIFIED_TOKENS: usize = 4096;

impl VerifiedTokens {
    fn get_or_verify(&self, token: &str, signer: &Signer) -> Option<Arc<Value>> {
        if let Ok(map) = self.claims.read()
            && let Some(claims) = map.get(token)
        {
            return Some(claims.clone());
        }
        let claims = Arc::new(signer.verify(token)?);
        if let Ok(mut map) = self.claims.write() {
            if map.len() >= VERIFIED_TOKENS {
                map.clear();
            }
            map.insert(token.to_string(), claims.clone());
        }
        Some(claims)
    }
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountTokens {
    /// Tokens signed by `signer`, issued by [`DEFAULT_ISSUER`] for the API
    /// server's audience, checked against the objects in `store`.
    pub fn new(signer: Signer, store: Store) -> ServiceAccountTokens {
        ServiceAccountTokens {
            signer: Arc::new(signer),
            issuer: DEFAULT_ISSUER.to_string(),
            audiences: vec![DEFAULT_ISSUER.to_string()],
            store,
            verified: Arc::default(),
        }
    }

    /// The audiences the API server accepts.
    pub fn api_audiences(&self) -> &[String] {
        &self.audiences
    }

    /// A signed token for `spec`, issued now, with its expiry (Unix
    /// seconds); `None` only if signing fails.
    pub fn issue(&self, spec: &TokenSpec) -> Option<(String, i64)> {
        let now = jiff::Timestamp::now().as_second();
        let exp = now + spec.expiration_seconds;
        let audiences = if spec.audiences.is_empty() {
            self.audiences.clone()
        } else {
            spec.audiences.clone()
        };
        let mut private = json!({
            "namespace": spec.namespace,
            "serviceaccount": {"name": spec.name, "uid": spec.uid},
        });
        let object = |b: &BoundObject| json!({"name": b.name, "uid": b.uid});
        if let Some(b) = &spec.bound {
            private[b.kind.to_ascii_lowercase()] = object(b);
        }
        if let Some(n) = &spec.node {
            private["node"] = object(n);
        }
        let claims = json!({
            "aud": audiences,
            "exp": exp,
            "iat": now,
            "iss": self.issuer,
            "jti": crate::object::new_uid(),
            "kubernetes.io": private,
            "nbf": now,
            "sub": user_name(&spec.namespace, &spec.name),
        });
        Some((self.signer.sign(&claims)?, exp))
    }

    /// The user of a valid token for one of `audiences` (the API server's
    /// when empty), with the audiences it was valid for.
    ///
    /// # Errors
    /// Why the token is refused, in kube's words.
    pub fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let claims = self
            .verified
            .get_or_verify(token, &self.signer)
            .ok_or("invalid signature, no keys found")?;
        if claims["iss"].as_str() != Some(self.issuer.as_str()) {
            return Err("token issuer is not accepted".into());
        }
        let now = jiff::Timestamp::now().as_second();
        let exp = claims["exp"]
            .as_i64()
            .ok_or("service account token has expired")?;
        if exp + LEEWAY_SECONDS <= now {
            return Err("service account token has expired".into());
        }
        if claims["nbf"]
            .as_i64()
            .is_some_and(|nbf| nbf - LEEWAY_SECONDS > now)
        {
            return Err("service account token is not valid yet".into());
        }
        if claims["iat"]
            .as_i64()
            .is_some_and(|iat| iat - LEEWAY_SECONDS > now)
        {
            return Err("service account token is issued in the future".into());
        }
        let wanted = if audiences.is_empty() {
            &self.audiences
        } else {
            audiences
        };
        let token_audiences: Vec<&str> = match &claims["aud"] {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let matched: Vec<String> = wanted
            .iter()
            .filter(|a| token_audiences.contains(&a.as_str()))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_list(&token_audiences),
                go_list(&wanted.iter().map(String::as_str).collect::<Vec<_>>())
            ));
        }
        let private = &claims["kubernetes.io"];
        let malformed = || "service account token claims are malformed".to_string();
        let namespace = private["namespace"].as_str().ok_or_else(malformed)?;
        let name = private["serviceaccount"]["name"]
            .as_str()
            .ok_or_else(malformed)?;
        let uid = private["serviceaccount"]["uid"]
            .as_str()
            .ok_or_else(malformed)?;
        if claims["sub"].as_str() != Some(user_name(namespace, name).as_str()) {
            return Err(malformed());
        }
        let sa = self
            .current("serviceaccounts", namespace, name)
            .ok_or_else(|| format!("serviceaccounts {name:?} not found"))?;
        let sa_uid = sa["metadata"]["uid"].as_str().unwrap_or_default();
        if sa_uid != uid {
            return Err(format!(
                "service account UID ({sa_uid}) does not match claim ({uid})"
            ));
        }
        if !sa["metadata"]["deletionTimestamp"].is_null() {
            return Err(format!(
                "service account {namespace}/{name} has been deleted"
            ));
        }
        let mut extra = BTreeMap::new();
        if let Some(jti) = claims["jti"].as_str().filter(|j| !j.is_empty()) {
            extra.insert(
                "authentication.kubernetes.io/credential-id".to_string(),
                vec![format!("JTI={jti}")],
            );
        }
        for (kind, plural) in [("pod", "pods"), ("secret", "secrets")] {
            let bound = &private[kind];
            if bound.is_null() {
                continue;
            }
            let bname = bound["name"].as_str().unwrap_or_default();
            let buid = bound["uid"].as_str().unwrap_or_default();
            let obj = self
                .current(plural, namespace, bname)
                .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
                .ok_or("service account token has been invalidated")?;
            let actual = obj["metadata"]["uid"].as_str().unwrap_or_default();
            if actual != buid {
                return Err(format!(
                    "{kind} UID ({actual}) does not match service account {kind} ref claim ({buid})"
                ));
            }
            if kind == "pod" {
                let mut put = |k: &str, v: &str| extra.insert(k.to_string(), vec![v.to_string()]);
                put("authentication.kubernetes.io/pod-name", bname);
                put("authentication.kubernetes.io/pod-uid", buid);
            }
        }
        if let Some(node) = private["node"]["name"].as_str() {
            extra.insert(
                "authentication.kubernetes.io/node-name".into(),
                vec![node.to_string()],
            );
            if let Some(node_uid) = private["node"]["uid"].as_str().filter(|u| !u.is_empty()) {
                extra.insert(
                    "authentication.kubernetes.io/node-uid".into(),
                    vec![node_uid.to_string()],
                );
            }
        }
        let user = UserInfo {
            name: user_name(namespace, name),
            uid: uid.to_string(),
            groups: groups(namespace),
            extra,
        };
        Ok((user, matched))
    }

    /// The current object `plural/namespace/name` of the core group.
    fn current(&self, plural: &str, namespace: &str, name: &str) -> Option<std::sync::Arc<Value>> {
        self.store
            .current(&format!("/core/{plural}/{namespace}/{name}"))
            .map(|s| s.object)
    }
}

/// The leeway of the time checks, go-jose's default.
const LEEWAY_SECONDS: i64 = 60;

/// A string list as Go's `%q` prints it: `["a" "b"]`.
fn go_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> (ServiceAccountTokens, Store) {
        use rcgen::PublicKeyData;
        let key = rcgen::KeyPair::generate().expect("key");
        let signer = Signer::from_pkcs8(key.serialized_der(), &key.subject_public_key_info())
            .expect("signer");
        let store = Store::open(None).expect("store");
        (ServiceAccountTokens::new(signer, store.clone()), store)
    }

    fn claims(tokens: &ServiceAccountTokens, exp: i64, aud: &str, uid: &str) -> Value {
        let now = jiff::Timestamp::now().as_second();
        json!({
            "aud": [aud], "exp": now + exp, "iat": now - 700, "nbf": now - 700,
            "iss": tokens.issuer, "jti": "j",
            "kubernetes.io": {"namespace": "team", "serviceaccount": {"name": "robot", "uid": uid}},
            "sub": "system:serviceaccount:team:robot",
        })
    }

    #[tokio::test]
    async fn expired_foreign_and_orphaned_tokens_are_refused_with_kubes_reasons() {
        let (tokens, store) = tokens();
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "robot", "namespace": "team", "uid": "u1"}});
        store
            .create("/core/serviceaccounts/team/robot", sa)
            .await
            .expect("stored");
        let sign = |c: &Value| tokens.signer.sign(c).expect("signed");
        let good = sign(&claims(&tokens, 600, DEFAULT_ISSUER, "u1"));
        let (user, audiences) = tokens.authenticate(&good, &[]).expect("valid");
        assert_eq!(user.name, "system:serviceaccount:team:robot");
        assert_eq!(user.uid, "u1");
        assert_eq!(audiences, [DEFAULT_ISSUER]);
        assert_eq!(
            user.extra.get("authentication.kubernetes.io/credential-id"),
            Some(&vec!["JTI=j".to_string()])
        );
        let expired = sign(&claims(&tokens, -120, DEFAULT_ISSUER, "u1"));
        assert_eq!(
            tokens.authenticate(&expired, &[]).err().as_deref(),
            Some("service account token has expired")
        );
        let elsewhere = sign(&claims(&tokens, 600, "vault", "u1"));
        assert_eq!(
            tokens.authenticate(&elsewhere, &[]).err().as_deref(),
            Some(
                "token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
            )
        );
        assert!(tokens.authenticate(&elsewhere, &["vault".into()]).is_ok());
        let recreated = sign(&claims(&tokens, 600, DEFAULT_ISSUER, "u0"));
        assert_eq!(
            tokens.authenticate(&recreated, &[]).err().as_deref(),
            Some("service account UID (u1) does not match claim (u0)")
        );
        let mut bound = claims(&tokens, 600, DEFAULT_ISSUER, "u1");
        bound["kubernetes.io"]["pod"] = json!({"name": "p", "uid": "pu"});
        assert_eq!(
            tokens.authenticate(&sign(&bound), &[]).err().as_deref(),
            Some("service account token has been invalidated")
        );
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "p", "namespace": "team", "uid": "pu"}});
        store
            .create("/core/pods/team/p", pod)
            .await
            .expect("stored");
        let (user, _) = tokens
            .authenticate(&sign(&bound), &[])
            .expect("bound to a live pod");
        assert_eq!(
            user.extra.get("authentication.kubernetes.io/pod-name"),
            Some(&vec!["p".to_string()])
        );
    }

    #[test]
    fn service_account_user_names_split_as_kube_makes_them() {
        assert_eq!(
            user_name("team", "robot"),
            "system:serviceaccount:team:robot"
        );
        assert_eq!(
            split_user_name("system:serviceaccount:team:robot"),
            Some(("team", "robot"))
        );
        assert_eq!(split_user_name("system:serviceaccount:team"), None);
        assert_eq!(split_user_name("jane"), None);
        assert_eq!(
            groups("team"),
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team",
                "system:authenticated"
            ]
        );
    }
}
