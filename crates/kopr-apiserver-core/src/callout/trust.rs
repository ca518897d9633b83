//! Whom the server trusts when it calls a webhook: the chain is verified
//! against the webhook's `caBundle` (or the system roots) with rustls, plus
//! one rule of Go's `crypto/x509` that webpki lacks: a certificate that is
//! itself in the bundle is trusted as it is, even when it is a CA
//! certificate serving as its own leaf (a self-signed webhook certificate,
//! as Kopf generates). Its names must still match the host.

use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// The verifier of a webhook's certificate.
#[derive(Debug)]
pub(super) struct Verifier {
    inner: Arc<WebPkiServerVerifier>,
    /// The bundle's certificates, trusted as leaves too.
    bundle: Vec<CertificateDer<'static>>,
}

impl Verifier {
    /// Verifies against `roots`, trusting the certificates of `bundle` as
    /// leaves too.
    ///
    /// # Errors
    /// Roots rustls cannot use.
    pub fn new(
        roots: rustls::RootCertStore,
        bundle: Vec<CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Verifier, rustls::client::VerifierBuilderError> {
        let inner =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
        Ok(Verifier { inner, bundle })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)))
                if matches!(
                    other.0.downcast_ref::<webpki::Error>(),
                    Some(webpki::Error::CaUsedAsEndEntity)
                ) && self
                    .bundle
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let cert = webpki::EndEntityCert::try_from(end_entity).map_err(|_| {
                    rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
                })?;
                cert.verify_is_valid_for_subject_name(server_name)
                    .map_err(|_| {
                        rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
                    })?;
                let (not_before, not_after) = validity(end_entity.as_ref()).ok_or(
                    rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding),
                )?;
                let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
                if now < not_before {
                    return Err(rustls::Error::InvalidCertificate(
                        rustls::CertificateError::NotValidYet,
                    ));
                }
                if now > not_after {
                    return Err(rustls::Error::InvalidCertificate(
                        rustls::CertificateError::Expired,
                    ));
                }
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// One DER element: its tag, its contents and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |n, b| (n << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// Seconds since the epoch of a UTCTime (`YYMMDDHHMMSSZ`) or
/// GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 => {
            let yy: i64 = text.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, text.get(2..)?)
        }
        0x18 => (text.get(..4)?.parse().ok()?, text.get(4..)?),
        _ => return None,
    };
    let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    // Days from the civil date (proleptic Gregorian calendar).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// A certificate's validity period, in seconds since the epoch.
fn validity(der: &[u8]) -> Option<(i64, i64)> {
    let (_, certificate, _) = element(der)?;
    let (_, tbs, _) = element(certificate)?;
    let mut rest = tbs;
    let (tag, _, after) = element(rest)?;
    if tag == 0xa0 {
        rest = after; // [0] version
    }
    for _ in 0..3 {
        rest = element(rest)?.2; // serial, signature algorithm, issuer
    }
    let (_, period, _) = element(rest)?;
    let (tag, start, after) = element(period)?;
    let not_before = time(tag, start)?;
    let (tag, end, _) = element(after)?;
    Some((not_before, time(tag, end)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_read_from_the_certificate() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2024, 2, 29);
        params.not_after = rcgen::date_time_ymd(2051, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        // 2024-02-29T00:00:00Z and 2051-01-01T00:00:00Z.
        assert_eq!(
            validity(cert.der().as_ref()),
            Some((1_709_164_800, 2_556_144_000))
        );
        assert_eq!(validity(b"not a certificate"), None);
    }
}
