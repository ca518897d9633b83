//! Client-certificate authentication, as kube-apiserver's x509
//! authenticator with `--client-ca-file` set to the cluster CA: the chain a
//! client presented in the TLS handshake (asked for, not required, and not
//! verified there: Go's `tls.RequestClientCert`) is verified here against
//! the CA for client authentication, at the time of the request. A verified
//! certificate is the user of its subject's common name, in the groups of
//! its organizations, with the UID of kube's UID attribute
//! (`1.3.6.1.4.1.57683.2`) and the credential id
//! `X509SHA256=<certificate fingerprint>`; a certificate without a common
//! name authenticates no one. An untrusted or expired certificate fails the
//! request with 401 unless a bearer token authenticates it.

use std::collections::BTreeMap;

use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime};

use super::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, Unauthenticated, UserInfo,
};
use crate::x509::certificate;

/// The `user.Info` extra key of the credential a request used.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// Why the client CA could not be read.
#[derive(Debug, thiserror::Error)]
#[error("client CA: {0}")]
pub struct ClientCaError(String);

/// The client CA and what it vouches for.
#[derive(Debug, Clone)]
pub struct ClientCertificates {
    anchors: Vec<TrustAnchor<'static>>,
}

impl ClientCertificates {
    /// Trusts the certificates of `ca_pem` as client CAs.
    ///
    /// # Errors
    /// When the PEM holds no usable certificate.
    pub fn from_pem(ca_pem: &str) -> Result<ClientCertificates, ClientCaError> {
        use rustls::pki_types::pem::PemObject;
        let mut anchors = Vec::new();
        for der in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let der = der.map_err(|e| ClientCaError(e.to_string()))?;
            let anchor =
                webpki::anchor_from_trusted_cert(&der).map_err(|e| ClientCaError(e.to_string()))?;
            anchors.push(anchor.to_owned());
        }
        if anchors.is_empty() {
            return Err(ClientCaError("no certificate".into()));
        }
        Ok(ClientCertificates { anchors })
    }

    /// The user of a client's certificate chain (leaf first): `Ok(None)`
    /// when the certificate names no one.
    ///
    /// # Errors
    /// [`Unauthenticated`] when the chain does not verify for client
    /// authentication or its subject cannot be read.
    pub fn authenticate(
        &self,
        chain: &[CertificateDer<'_>],
    ) -> Result<Option<UserInfo>, Unauthenticated> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Ok(None);
        };
        let parsed = certificate::parse(leaf).map_err(|e| Unauthenticated(e.to_string()))?;
        let failed = |why: String| {
            Unauthenticated(format!(
                "verifying certificate {} failed: {why}",
                certificate::identifier(&parsed)
            ))
        };
        let end_entity =
            webpki::EndEntityCert::try_from(leaf).map_err(|e| failed(format!("x509: {e}")))?;
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &self.anchors,
                intermediates,
                UnixTime::now(),
                webpki::KeyUsage::client_auth(),
                None,
                None,
            )
            .map_err(|e| failed(go_error(&e)))?;
        user_of(leaf, &parsed.subject)
    }
}

/// Go's words for a verification failure.
fn go_error(e: &webpki::Error) -> String {
    match e {
        // A CA of the same name whose key did not sign it is unknown too.
        webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey => {
            "x509: certificate signed by unknown authority".into()
        }
        webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
            "x509: certificate has expired or is not yet valid".into()
        }
        webpki::Error::RequiredEkuNotFoundContext(_) => {
            "x509: certificate specifies an incompatible key usage".into()
        }
        other => format!("x509: {other:?}"),
    }
}

/// kube's `CommonNameUserConversion`, then its authenticated-group adder.
fn user_of(
    leaf: &CertificateDer<'_>,
    subject: &crate::x509::name::Name,
) -> Result<Option<UserInfo>, Unauthenticated> {
    if subject.common_name.is_empty() {
        return Ok(None);
    }
    let uid = match subject.uids.as_slice() {
        [] => String::new(),
        [Some(uid)] if uid.is_empty() => {
            return Err(Unauthenticated("UID cannot be an empty string".into()));
        }
        [Some(uid)] => uid.clone(),
        uids if uids.iter().any(Option::is_none) => {
            return Err(Unauthenticated("unable to parse UID into a string".into()));
        }
        uids => {
            let all: Vec<&str> = uids.iter().flatten().map(String::as_str).collect();
            return Err(Unauthenticated(format!(
                "expected 1 UID, but found multiple: [{}]",
                all.join(" ")
            )));
        }
    };
    let fingerprint = ring::digest::digest(&ring::digest::SHA256, leaf);
    let hex: String = fingerprint
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut groups = subject.organization.clone();
    let marked = groups
        .iter()
        .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
    if subject.common_name != ANONYMOUS_USER && !marked {
        groups.push(AUTHENTICATED_GROUP.into());
    }
    Ok(Some(UserInfo {
        name: subject.common_name.clone(),
        uid,
        groups,
        extra: BTreeMap::from([(
            CREDENTIAL_ID_KEY.to_string(),
            vec![format!("X509SHA256={hex}")],
        )]),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};

    fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("ca");
        (cert.pem(), Issuer::new(params, key))
    }

    fn client(
        issuer: &Issuer<'_, KeyPair>,
        cn: &str,
        eku: ExtendedKeyUsagePurpose,
    ) -> CertificateDer<'static> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "devs");
        // A second O (rcgen keeps one value per type, so under the same OID as a custom type).
        params
            .distinguished_name
            .push(DnType::CustomDnType(vec![2, 5, 4, 10]), "ops");
        params.extended_key_usages = vec![eku];
        let key = KeyPair::generate().expect("key");
        params
            .signed_by(&key, issuer)
            .expect("client")
            .der()
            .clone()
    }

    #[test]
    fn a_verified_certificate_is_its_common_name_in_its_organizations() {
        let (pem, issuer) = ca("client-ca");
        let certs = ClientCertificates::from_pem(&pem).expect("ca");
        let leaf = client(&issuer, "alice", ExtendedKeyUsagePurpose::ClientAuth);
        let user = certs
            .authenticate(std::slice::from_ref(&leaf))
            .expect("verified")
            .expect("a user");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["devs", "ops", AUTHENTICATED_GROUP]);
        let id = &user.extra[CREDENTIAL_ID_KEY][0];
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");

        let nobody = client(&issuer, "", ExtendedKeyUsagePurpose::ClientAuth);
        assert_eq!(certs.authenticate(&[nobody]), Ok(None));
    }

    #[test]
    fn other_cas_and_server_only_certificates_are_refused() {
        let (pem, issuer) = ca("client-ca");
        let certs = ClientCertificates::from_pem(&pem).expect("ca");
        let (_, stranger) = ca("client-ca");
        let foreign = client(&stranger, "mallory", ExtendedKeyUsagePurpose::ClientAuth);
        let err = certs
            .authenticate(&[foreign])
            .expect_err("unknown authority");
        assert!(
            err.0
                .ends_with("failed: x509: certificate signed by unknown authority"),
            "{}",
            err.0
        );
        let serving = client(&issuer, "web", ExtendedKeyUsagePurpose::ServerAuth);
        let err = certs.authenticate(&[serving]).expect_err("server only");
        assert!(err.0.contains("incompatible key usage"), "{}", err.0);
    }
}
