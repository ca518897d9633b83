//! Asking TLS clients for a certificate as kube-apiserver does with a
//! client CA (Go's `tls.RequestClientCert`): the handshake offers the CA's
//! name as a hint, accepts a connection without a certificate, and accepts
//! any certificate chain as long as the client proves it holds the leaf's
//! key. Whether the chain is trusted is decided per request by
//! authentication (`authn::x509`), so an untrusted certificate gets a 401
//! rather than a failed handshake, as from kube.

use std::sync::Arc;

use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The verifier of the TLS server config.
#[derive(Debug)]
pub(super) struct RequestClientCert {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl RequestClientCert {
    /// Hints the subjects of the CA certificates in `ca_pem`; checks
    /// handshake signatures with `provider`'s algorithms.
    pub(super) fn new(
        ca_pem: &str,
        provider: &Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<RequestClientCert, rustls::Error> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for der in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let der = der.map_err(|e| rustls::Error::General(format!("client CA: {e}")))?;
            roots.add(der)?;
        }
        Ok(RequestClientCert {
            hints: roots.subjects(),
            algorithms: provider.signature_verification_algorithms,
        })
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Go refuses a certificate it cannot parse; trust comes later.
        webpki::EndEntityCert::try_from(end_entity).map_err(|_| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
        })?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
