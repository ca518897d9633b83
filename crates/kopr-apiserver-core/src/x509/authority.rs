//! The cluster CA issuing certificates for certificate requests, as
//! kube-controller-manager's local signer does (`authority.Sign` under the
//! `PermissiveSigningPolicy`): the request's subject and subject alternative
//! names, the requested usages as key usage and extended key usage, no
//! other extension, `CA:FALSE`, a random 128-bit serial number, validity
//! backdated and cut at the CA's own end, signed with the CA key (rcgen's
//! `KeyPair`), written as Go's `x509.CreateCertificate` writes it.

use std::time::Duration;

use rcgen::{PublicKeyData, SigningKey};

use super::certificate;
use super::der::{self, OID, SEQUENCE};
use super::request::{self, KeyKind, Request};

/// Why the CA cannot be used, or a certificate not issued.
#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    /// The CA certificate could not be read.
    #[error("the CA certificate: {0}")]
    Certificate(&'static str),
    /// The CA certificate is not a certificate.
    #[error("the CA certificate: {0}")]
    Parse(#[from] certificate::CertificateError),
    /// The CA key could not be read.
    #[error("the CA key: {0}")]
    Key(#[from] rcgen::Error),
    /// The key does not belong to the certificate, or signs with an
    /// algorithm this signer does not write.
    #[error("the CA key: {0}")]
    KeyMismatch(&'static str),
    /// The signing policy refused (kube's messages).
    #[error("{0}")]
    Policy(String),
}

/// How a certificate is issued (kube's `PermissiveSigningPolicy`).
#[derive(Debug, Clone)]
pub struct Policy<'a> {
    /// The lifetime asked for.
    pub ttl: Duration,
    /// The CSR's usages (`client auth`, `digital signature`, ...).
    pub usages: &'a [String],
    /// How far back `notBefore` goes.
    pub backdate: Duration,
    /// Lifetimes below this are not shortened by the backdate.
    pub short: Duration,
}

/// A CA certificate and its key.
pub struct Authority {
    key: rcgen::KeyPair,
    signature_algorithm: &'static [u8],
    issuer: Vec<u8>,
    not_after: jiff::Timestamp,
    key_id: Option<Vec<u8>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

const ECDSA_SHA256: &[u8] = &[
    0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
];
const ECDSA_SHA384: &[u8] = &[
    0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03,
];
const ED25519: &[u8] = &[0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70];
const RSA_SHA256: &[u8] = &[
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00,
];

const KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];

/// The key usages of the certificates API, as bit numbers of X.509's
/// KeyUsage (Go's `x509.KeyUsage` order).
const KEY_USAGES: &[(&str, u8)] = &[
    ("signing", 0),
    ("digital signature", 0),
    ("content commitment", 1),
    ("key encipherment", 2),
    ("data encipherment", 3),
    ("key agreement", 4),
    ("cert sign", 5),
    ("crl sign", 6),
    ("encipher only", 7),
    ("decipher only", 8),
];

/// The extended key usages, in Go's `x509.ExtKeyUsage` order (which is
/// the order they are written in), with their OIDs.
const EXT_KEY_USAGES: &[(&[&str], &[u8])] = &[
    (&["any"], &[0x55, 0x1d, 0x25, 0x00]),
    (
        &["server auth"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01],
    ),
    (
        &["client auth"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02],
    ),
    (
        &["code signing"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03],
    ),
    (
        &["email protection", "s/mime"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x04],
    ),
    (
        &["ipsec end system"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x05],
    ),
    (
        &["ipsec tunnel"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x06],
    ),
    (
        &["ipsec user"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x07],
    ),
    (
        &["timestamping"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08],
    ),
    (
        &["ocsp signing"],
        &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09],
    ),
    (
        &["microsoft sgc"],
        &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x0a, 0x03, 0x03],
    ),
    (
        &["netscape sgc"],
        &[0x60, 0x86, 0x48, 0x01, 0x86, 0xf8, 0x42, 0x04, 0x01],
    ),
];

impl Authority {
    /// The CA of `cert_pem` (its first certificate) with the PKCS#8 key
    /// of `key_pem`.
    ///
    /// # Errors
    /// When either cannot be read, or the key is not the certificate's.
    pub fn new(cert_pem: &str, key_pem: &str) -> Result<Authority, AuthorityError> {
        let der = match super::pem::decode(cert_pem.as_bytes()) {
            Some((block, _)) if block.kind == "CERTIFICATE" => block.der,
            _ => return Err(AuthorityError::Certificate("no CERTIFICATE block")),
        };
        let cert = certificate::parse(&der)?;
        let key = rcgen::KeyPair::from_pem(key_pem)?;
        if key.subject_public_key_info() != cert.public_key_info {
            return Err(AuthorityError::KeyMismatch("not the certificate's key"));
        }
        let alg = key.algorithm();
        let signature_algorithm = if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
            ECDSA_SHA256
        } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
            ECDSA_SHA384
        } else if alg == &rcgen::PKCS_ED25519 {
            ED25519
        } else if alg == &rcgen::PKCS_RSA_SHA256 {
            RSA_SHA256
        } else {
            return Err(AuthorityError::KeyMismatch(
                "unsupported signature algorithm",
            ));
        };
        Ok(Authority {
            key,
            signature_algorithm,
            issuer: cert.raw_subject,
            not_after: cert.not_after,
            key_id: cert.subject_key_id,
        })
    }

    /// Issues a certificate (DER) for `request` under `policy`, at `now`.
    ///
    /// # Errors
    /// The policy's refusals, in kube's words, or a signing failure.
    pub fn sign(
        &self,
        request: &Request,
        policy: &Policy<'_>,
        now: jiff::Timestamp,
    ) -> Result<Vec<u8>, AuthorityError> {
        if request.key == KeyKind::Unknown {
            return Err(AuthorityError::Policy(
                "failed to sign certificate: x509: unsupported public key type".into(),
            ));
        }
        let (key_usage, ext_key_usages) = usages(policy.usages)?;
        let (not_before, not_after) = self.validity(policy, now)?;
        let subject = request.subject.encode();
        let mut extensions: Vec<Vec<u8>> = Vec::new();
        if let Some(bits) = key_usage {
            extensions.push(extension(KEY_USAGE, true, &bits));
        }
        if !ext_key_usages.is_empty() {
            let oids: Vec<Vec<u8>> = ext_key_usages.iter().map(|o| der::tlv(OID, o)).collect();
            let parts: Vec<&[u8]> = oids.iter().map(Vec::as_slice).collect();
            extensions.push(extension(EXT_KEY_USAGE, false, &der::sequence(&parts)));
        }
        extensions.push(extension(BASIC_CONSTRAINTS, true, &der::sequence(&[])));
        if let Some(id) = self.key_id.as_ref().filter(|_| subject != self.issuer) {
            let value = der::sequence(&[&der::tlv(0x80, id)]);
            extensions.push(extension(AUTHORITY_KEY_ID, false, &value));
        }
        if let Some(names) = request::alt_names(request) {
            let empty_subject = subject == [SEQUENCE, 0];
            extensions.push(extension(request::SUBJECT_ALT_NAME, empty_subject, &names));
        }
        let serial = serial_number();
        let version = der::constructed(der::context(0), &[&der::tlv(der::INTEGER, &[2])]);
        let validity = der::sequence(&[&der::time(not_before), &der::time(not_after)]);
        let ext_parts: Vec<&[u8]> = extensions.iter().map(Vec::as_slice).collect();
        let extensions = der::constructed(der::context(3), &[&der::sequence(&ext_parts)]);
        let tbs = der::sequence(&[
            &version,
            &der::unsigned(&serial),
            self.signature_algorithm,
            &self.issuer,
            &validity,
            &subject,
            &request.public_key_info,
            &extensions,
        ]);
        let signature = self
            .key
            .sign(&tbs)
            .map_err(|e| AuthorityError::Policy(format!("failed to sign certificate: {e}")))?;
        Ok(der::sequence(&[
            &tbs,
            self.signature_algorithm,
            &der::bits(&signature, None),
        ]))
    }

    /// `notBefore` and `notAfter` as the permissive policy sets them.
    fn validity(
        &self,
        policy: &Policy<'_>,
        now: jiff::Timestamp,
    ) -> Result<(jiff::Timestamp, jiff::Timestamp), AuthorityError> {
        let span =
            |d: Duration| jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX);
        let add = |t: jiff::Timestamp, d: jiff::SignedDuration| {
            t.checked_add(d).unwrap_or(jiff::Timestamp::MAX)
        };
        let sub = |t: jiff::Timestamp, d: jiff::SignedDuration| {
            t.checked_sub(d).unwrap_or(jiff::Timestamp::MIN)
        };
        let not_before = sub(now, span(policy.backdate));
        let mut not_after = if policy.ttl < policy.short {
            add(now, span(policy.ttl))
        } else {
            add(now, span(policy.ttl.saturating_sub(policy.backdate)))
        };
        if not_after >= self.not_after {
            not_after = self.not_after;
        }
        let shown = go_time(self.not_after);
        if not_before >= self.not_after {
            return Err(AuthorityError::Policy(format!(
                "the signer has expired: NotAfter={shown}"
            )));
        }
        if now >= self.not_after {
            return Err(AuthorityError::Policy(format!(
                "refusing to sign a certificate that expired in the past: NotAfter={shown}"
            )));
        }
        Ok((not_before, not_after))
    }
}

/// Go's `%v` of a UTC `time.Time`.
fn go_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

/// An extension: OID, critical flag (written only when true), value.
fn extension(id: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    let oid = der::tlv(OID, id);
    let value = der::tlv(der::OCTET_STRING, value);
    if critical {
        der::sequence(&[&oid, &der::tlv(der::BOOLEAN, &[0xff]), &value])
    } else {
        der::sequence(&[&oid, &value])
    }
}

/// A KeyUsage BIT STRING, if any bit is set, and extended key usage OIDs.
type Usages = (Option<Vec<u8>>, Vec<&'static [u8]>);

/// kube's `keyUsagesFromStrings`: the KeyUsage BIT STRING (none when no
/// bit is set) and the extended key usage OIDs in Go's order.
fn usages(names: &[String]) -> Result<Usages, AuthorityError> {
    let mut bits: u16 = 0;
    let mut ext = vec![false; EXT_KEY_USAGES.len()];
    let mut unrecognized: Vec<&str> = Vec::new();
    for name in names {
        if let Some((_, bit)) = KEY_USAGES.iter().find(|(n, _)| n == name) {
            bits |= 1 << bit;
        } else if let Some(i) = EXT_KEY_USAGES
            .iter()
            .position(|(n, _)| n.contains(&name.as_str()))
        {
            ext[i] = true;
        } else {
            unrecognized.push(name);
        }
    }
    if !unrecognized.is_empty() {
        let quoted: Vec<String> = unrecognized
            .iter()
            .map(|u| crate::gofmt::quote(u))
            .collect();
        return Err(AuthorityError::Policy(format!(
            "unrecognized usage values: [{}]",
            quoted.join(" ")
        )));
    }
    let ext_oids = EXT_KEY_USAGES
        .iter()
        .zip(ext)
        .filter(|(_, on)| *on)
        .map(|((_, oid), _)| *oid)
        .collect();
    if bits == 0 {
        return Ok((None, ext_oids));
    }
    // Bit n of KeyUsage is bit (7 - n % 8) of byte n / 8.
    let mut bytes = vec![0u8; if bits >> 8 != 0 { 2 } else { 1 }];
    for n in 0..9u16 {
        if bits & (1 << n) != 0 {
            bytes[usize::from(n / 8)] |= 0x80 >> (n % 8);
        }
    }
    let length = 16 - bits.leading_zeros() as usize;
    Ok((Some(der::bits(&bytes, Some(length))), ext_oids))
}

/// A random serial number below 2^128, never zero.
fn serial_number() -> [u8; 16] {
    loop {
        let serial: [u8; 16] = rand::random();
        if serial.iter().any(|b| *b != 0) {
            return serial;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_certificate_verifies_under_the_ca_with_the_policys_window() {
        let creds = crate::pki::generate(&[]).expect("credentials");
        let ca = Authority::new(
            &creds.ca_pem,
            creds.ca_key_pem.as_deref().unwrap_or_default(),
        )
        .expect("authority");
        let mut params =
            rcgen::CertificateParams::new(vec!["alice.example".to_string()]).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "devs");
        let key = rcgen::KeyPair::generate().expect("key");
        let pem = params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem");
        let request = request::parse_pem(pem.as_bytes()).expect("request");
        assert_eq!(request.dns_names, ["alice.example"]);
        let usages = vec!["client auth".to_string(), "digital signature".to_string()];
        let policy = Policy {
            ttl: Duration::from_secs(24 * 3600),
            usages: &usages,
            backdate: Duration::from_secs(300),
            short: Duration::from_secs(8 * 3600),
        };
        let now = jiff::Timestamp::now();
        let der = ca.sign(&request, &policy, now).expect("issued");

        let cert = certificate::parse(&der).expect("parses");
        assert_eq!(cert.subject.common_name, "alice");
        assert_eq!(cert.subject.organization, ["devs"]);
        assert_eq!(cert.public_key_info, request.public_key_info);
        // A day from now less the backdate, to the second.
        let expected = now
            .checked_add(jiff::SignedDuration::from_secs(24 * 3600 - 300))
            .expect("t");
        assert_eq!(cert.not_after.as_second(), expected.as_second());

        let ca_der = crate::x509::pem::decode(creds.ca_pem.as_bytes())
            .expect("ca pem")
            .0
            .der;
        let ca_der = rustls::pki_types::CertificateDer::from(ca_der);
        let anchor = webpki::anchor_from_trusted_cert(&ca_der).expect("anchor");
        let leaf = rustls::pki_types::CertificateDer::from(der);
        let end_entity = webpki::EndEntityCert::try_from(&leaf).expect("end entity");
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &[anchor],
                &[],
                rustls::pki_types::UnixTime::now(),
                webpki::KeyUsage::client_auth(),
                None,
                None,
            )
            .expect("verifies for client auth");
        assert!(
            end_entity
                .verify_for_usage(
                    webpki::ALL_VERIFICATION_ALGS,
                    &[webpki::anchor_from_trusted_cert(&ca_der).expect("anchor")],
                    &[],
                    rustls::pki_types::UnixTime::now(),
                    webpki::KeyUsage::server_auth(),
                    None,
                    None,
                )
                .is_err(),
            "not for server auth"
        );
    }

    #[test]
    fn usages_become_key_usage_bits_and_sorted_extended_usages() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (bits, ext) = usages(&names(&[
            "key encipherment",
            "digital signature",
            "client auth",
            "server auth",
        ]))
        .expect("usages");
        // digitalSignature and keyEncipherment: 0b101 in the top bits, 5 unused.
        assert_eq!(bits, Some(vec![0x03, 0x02, 0x05, 0xa0]));
        assert_eq!(ext, [EXT_KEY_USAGES[1].1, EXT_KEY_USAGES[2].1]);
        let (bits, _) = usages(&names(&["decipher only"])).expect("usages");
        assert_eq!(bits, Some(vec![0x03, 0x03, 0x07, 0x00, 0x80]));
        assert_eq!(usages(&names(&["client auth"])).expect("usages").0, None);
        let err = usages(&names(&["bogus"])).expect_err("refused");
        assert_eq!(err.to_string(), r#"unrecognized usage values: ["bogus"]"#);
    }
}
