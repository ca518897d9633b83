//! Authentication: who a request comes from, from its credentials, as
//! kube-apiserver's authenticator chain finds it.
//!
//! A client certificate from the TLS handshake comes first, as kube's x509
//! authenticator does before the token authenticators ([`x509`]): one the
//! cluster CA issued names the user (common name) and groups
//! (organizations); one it did not is a 401 unless a bearer token
//! authenticates the request. Then a bearer token in the `Authorization`
//! header (the only place a token is read) is tried by each token
//! authenticator in turn: the server's admin
//! token (user `kopr-admin` in `system:masters`), the static users of a
//! token file ([`token_file`]), and service-account tokens
//! ([`service_account`]). A token none of them accepts is a 401. A request
//! with no bearer token is `system:anonymous` in `system:unauthenticated`
//! (kube's `--anonymous-auth`, on by default), which the bootstrap RBAC
//! policy lets read only the health and version endpoints.

pub mod jwt;
pub mod service_account;
pub mod token_file;
pub mod x509;

use std::sync::Arc;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use rustls::pki_types::CertificateDer;

use service_account::ServiceAccountTokens;
use token_file::TokenFile;

pub use crate::identity::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP, UserInfo,
};

/// The admin token's user.
pub const ADMIN_USER: &str = "kopr-admin";

/// The bearer token of a request's `Authorization` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Every way a request can be authenticated.
#[derive(Debug, Clone)]
pub struct Authentication {
    admin_token: Arc<str>,
    token_file: Option<Arc<TokenFile>>,
    service_accounts: Option<ServiceAccountTokens>,
    client_certificates: Option<x509::ClientCertificates>,
    anonymous: bool,
}

/// Why a request was not authenticated: it gets kube's 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unauthenticated(pub String);

impl Authentication {
    /// Accepts the admin token only, and anonymous requests.
    pub fn new(admin_token: &str) -> Authentication {
        Authentication {
            admin_token: Arc::from(admin_token),
            token_file: None,
            service_accounts: None,
            client_certificates: None,
            anonymous: true,
        }
    }

    /// Also accepts client certificates the CAs of `ca_pem` issued
    /// (kube's `--client-ca-file`).
    ///
    /// # Errors
    /// When `ca_pem` holds no usable certificate.
    pub fn with_client_ca(mut self, ca_pem: &str) -> Result<Authentication, x509::ClientCaError> {
        self.client_certificates = Some(x509::ClientCertificates::from_pem(ca_pem)?);
        Ok(self)
    }

    /// Also accepts the users of a token file.
    pub fn with_token_file(mut self, file: TokenFile) -> Authentication {
        self.token_file = Some(Arc::new(file));
        self
    }

    /// Also accepts service-account tokens.
    pub fn with_service_accounts(mut self, tokens: ServiceAccountTokens) -> Authentication {
        self.service_accounts = Some(tokens);
        self
    }

    /// Whether requests without credentials are `system:anonymous` (true)
    /// or refused with 401.
    pub fn anonymous(mut self, allowed: bool) -> Authentication {
        self.anonymous = allowed;
        self
    }

    /// The issuer of service-account tokens, if they are accepted.
    pub fn service_accounts(&self) -> Option<&ServiceAccountTokens> {
        self.service_accounts.as_ref()
    }

    /// The user a request comes from.
    ///
    /// # Errors
    /// [`Unauthenticated`] for a bearer token nobody accepts, or for no
    /// credentials when anonymous requests are off.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<UserInfo, Unauthenticated> {
        self.authenticate_request(headers, &[])
    }

    /// The user a request comes from, given the certificate chain its
    /// client presented in the TLS handshake (empty when none): kube's
    /// union of authenticators, x509 first, then bearer tokens, then
    /// anonymous unless an authenticator failed.
    ///
    /// # Errors
    /// [`Unauthenticated`] as [`Authentication::authenticate`], and for a
    /// certificate that does not verify when no token authenticates.
    pub fn authenticate_request(
        &self,
        headers: &HeaderMap,
        client_chain: &[CertificateDer<'_>],
    ) -> Result<UserInfo, Unauthenticated> {
        let mut failure = None;
        if let Some(certs) = self
            .client_certificates
            .as_ref()
            .filter(|_| !client_chain.is_empty())
        {
            match certs.authenticate(client_chain) {
                Ok(Some(user)) => return Ok(user),
                Ok(None) => {}
                Err(why) => failure = Some(why),
            }
        }
        match (bearer_token(headers), failure) {
            (Some(token), failure) => self
                .authenticate_token(token, &[])
                .map(|(user, _)| user)
                .map_err(|why| match failure {
                    Some(first) => Unauthenticated(format!("[{}, {}]", first.0, why.0)),
                    None => why,
                }),
            (None, Some(failure)) => Err(failure),
            (None, None) if self.anonymous => Ok(UserInfo::anonymous()),
            (None, None) => Err(Unauthenticated("no credentials".into())),
        }
    }

    /// The user of `token` for one of `audiences` (the API server's when
    /// empty), and the audiences it is valid for.
    ///
    /// # Errors
    /// [`Unauthenticated`], saying why in kube's words.
    pub fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), Unauthenticated> {
        let api_audiences = || {
            if audiences.is_empty() {
                self.service_accounts
                    .as_ref()
                    .map(|s| s.api_audiences().to_vec())
                    .unwrap_or_default()
            } else {
                audiences.to_vec()
            }
        };
        if constant_time_eq(token.as_bytes(), self.admin_token.as_bytes()) {
            let user = UserInfo {
                name: ADMIN_USER.into(),
                groups: vec![MASTERS_GROUP.into(), AUTHENTICATED_GROUP.into()],
                ..UserInfo::default()
            };
            return Ok((user, api_audiences()));
        }
        if let Some(user) = self.token_file.as_ref().and_then(|f| f.authenticate(token)) {
            return Ok((user, api_audiences()));
        }
        match &self.service_accounts {
            Some(sa) if jwt::looks_like_jwt(token) => sa
                .authenticate(token, audiences)
                .map_err(|why| Unauthenticated(format!("[invalid bearer token, {why}]"))),
            _ => Err(Unauthenticated("invalid bearer token".into())),
        }
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
    fn the_admin_token_is_a_master_and_no_token_is_anonymous() {
        let authn = Authentication::new("secret");
        let user = authn
            .authenticate(&headers("Bearer secret"))
            .expect("admin");
        assert!(user.in_group(MASTERS_GROUP));
        assert_eq!(user.name, ADMIN_USER);
        assert!(authn.authenticate(&headers("Bearer secreT")).is_err());
        assert_eq!(
            authn.authenticate(&headers("Basic secret")).map(|u| u.name),
            Ok(ANONYMOUS_USER.to_string())
        );
        let anonymous = authn.authenticate(&HeaderMap::new()).expect("anonymous");
        assert_eq!(anonymous.groups, [UNAUTHENTICATED_GROUP]);
        assert!(
            authn
                .clone()
                .anonymous(false)
                .authenticate(&HeaderMap::new())
                .is_err()
        );
    }
}
