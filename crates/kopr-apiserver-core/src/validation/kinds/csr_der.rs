//! The PEM and DER checks of CertificateSigningRequests: the first PEM block
//! of `spec.request` must be a PKCS#10 `CERTIFICATE REQUEST` whose signature
//! verifies (as Go's `x509.ParseCertificateRequest` + `CheckSignature`), and
//! `status.certificate` must be `CERTIFICATE` blocks only. PEM and DER are
//! read with [`crate::x509`].

use ring::signature;

use crate::x509::der::{BIT_STRING, OID, SEQUENCE, algorithm, bit_string, expect};
use crate::x509::pem::decode as pem_decode;

const OID_RSA_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

#[derive(PartialEq)]
enum KeyKind {
    Rsa,
    EcP256,
    EcP384,
    EcOther,
    Ed25519,
    Unknown,
}

enum SigKind {
    Rsa(&'static dyn signature::VerificationAlgorithm),
    Ecdsa(u16),
    Ed25519,
    /// An algorithm Go knows but this check cannot verify (RSA-PSS, ...).
    Unverifiable,
    Unknown,
}

fn sig_kind(oid: &[u8]) -> SigKind {
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    if let Some(last) = oid.strip_prefix(RSA) {
        return match last {
            [0x05] => SigKind::Rsa(&signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY),
            [0x0b] => SigKind::Rsa(&signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY),
            [0x0c] => SigKind::Rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            [0x0d] => SigKind::Rsa(&signature::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY),
            [0x0a] | [0x04] => SigKind::Unverifiable,
            _ => SigKind::Unknown,
        };
    }
    if let Some(last) = oid.strip_prefix(ECDSA) {
        return match last {
            [0x02] => SigKind::Ecdsa(256),
            [0x03] => SigKind::Ecdsa(384),
            [0x04] => SigKind::Ecdsa(512),
            _ => SigKind::Unknown,
        };
    }
    if oid == OID_ED25519 {
        return SigKind::Ed25519;
    }
    if oid == [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01] {
        return SigKind::Unverifiable;
    }
    SigKind::Unknown
}

fn key_type_name(k: &KeyKind) -> &'static str {
    match k {
        KeyKind::Rsa => "*rsa.PublicKey",
        KeyKind::Ed25519 => "ed25519.PublicKey",
        KeyKind::Unknown => "<nil>",
        _ => "*ecdsa.PublicKey",
    }
}

/// Why `spec.request` is not a certificate request whose signature verifies; the
/// messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CsrError {
    /// The first PEM block is missing or not a `CERTIFICATE REQUEST`.
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotRequestPem,
    /// The DER structure is malformed (`encoding/asn1`'s message).
    #[error("{0}")]
    Der(&'static str),
    /// Bytes after the request.
    #[error("asn1: syntax error: trailing data")]
    TrailingData,
    /// The signature algorithm is for another kind of key than the request's.
    #[error(
        "x509: signature algorithm specifies an {want} public key, but have public key of type {have}"
    )]
    KeyMismatch {
        /// The key the algorithm is for (`RSA`, `ECDSA`, `Ed25519`).
        want: &'static str,
        /// Go's type name of the request's key.
        have: &'static str,
    },
    /// A signature algorithm Go does not know.
    #[error("x509: cannot verify signature: algorithm unimplemented")]
    Unimplemented,
    /// An RSA signature that does not verify.
    #[error("crypto/rsa: verification error")]
    Rsa,
    /// An ECDSA signature that does not verify.
    #[error("x509: ECDSA verification failure")]
    Ecdsa,
    /// An Ed25519 signature that does not verify.
    #[error("x509: Ed25519 verification failure")]
    Ed25519,
}

impl From<&'static str> for CsrError {
    fn from(message: &'static str) -> Self {
        CsrError::Der(message)
    }
}

/// Why `status.certificate` is not a list of certificates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CertificatesError {
    /// A PEM block of another type (as decoded).
    #[error(
        "only CERTIFICATE PEM blocks are allowed, found {}",
        crate::validation::go_quote(.0)
    )]
    NotCertificate(String),
    /// A PEM block with headers.
    #[error("no PEM block headers are permitted")]
    Headers,
    /// A block that does not hold a certificate (Go's message).
    #[error("{0}")]
    Shape(&'static str),
    /// No PEM block at all.
    #[error("must contain at least one CERTIFICATE PEM block")]
    Empty,
}

/// `x509.ParseCertificateRequest` + `CheckSignature` on DER bytes.
fn check_csr_der(der: &[u8]) -> Result<(), CsrError> {
    let (outer, rest) = expect(der, SEQUENCE)?;
    if !rest.is_empty() {
        return Err(CsrError::TrailingData);
    }
    let (tbs, after_tbs) = expect(outer.contents, SEQUENCE)?;
    let (sig_oid, after_alg) = {
        let (alg_seq, rest) = expect(after_tbs, SEQUENCE)?;
        let (oid, _) = algorithm(alg_seq.raw)?;
        (oid, rest)
    };
    let (sig_bits, _) = expect(after_alg, BIT_STRING)?;
    let sig = bit_string(&sig_bits)?;
    // CertificationRequestInfo: version, subject, subjectPKInfo, attributes.
    let (_version, r) = expect(tbs.contents, 0x02)?;
    let (_subject, r) = expect(r, SEQUENCE)?;
    let (spki, _) = expect(r, SEQUENCE)?;
    let (key_oid, key_params) = algorithm(spki.contents)?;
    let (_, after_alg_id) = expect(spki.contents, SEQUENCE)?;
    let (key_bits, _) = expect(after_alg_id, BIT_STRING)?;
    let key = bit_string(&key_bits)?;
    let key_kind = if key_oid == OID_RSA_KEY {
        KeyKind::Rsa
    } else if key_oid == OID_ED25519 {
        KeyKind::Ed25519
    } else if key_oid == OID_EC_KEY {
        match expect(key_params, OID).map(|(d, _)| d.contents) {
            Ok(c) if c == OID_P256 => KeyKind::EcP256,
            Ok(c) if c == OID_P384 => KeyKind::EcP384,
            _ => KeyKind::EcOther,
        }
    } else {
        KeyKind::Unknown
    };
    let mismatch = |want: &'static str| {
        Err(CsrError::KeyMismatch {
            want,
            have: key_type_name(&key_kind),
        })
    };
    let signed = tbs.raw;
    match sig_kind(sig_oid) {
        SigKind::Unknown => Err(CsrError::Unimplemented),
        SigKind::Unverifiable => Ok(()),
        SigKind::Rsa(alg) => {
            if key_kind != KeyKind::Rsa {
                return mismatch("RSA");
            }
            signature::UnparsedPublicKey::new(alg, &key)
                .verify(signed, &sig)
                .map_err(|_| CsrError::Rsa)
        }
        SigKind::Ecdsa(bits) => {
            let alg: &dyn signature::VerificationAlgorithm = match (&key_kind, bits) {
                (KeyKind::EcP256, 256) => &signature::ECDSA_P256_SHA256_ASN1,
                (KeyKind::EcP256, 384) => &signature::ECDSA_P256_SHA384_ASN1,
                (KeyKind::EcP384, 256) => &signature::ECDSA_P384_SHA256_ASN1,
                (KeyKind::EcP384, 384) => &signature::ECDSA_P384_SHA384_ASN1,
                (KeyKind::EcP256 | KeyKind::EcP384 | KeyKind::EcOther, _) => return Ok(()),
                _ => return mismatch("ECDSA"),
            };
            signature::UnparsedPublicKey::new(alg, &key)
                .verify(signed, &sig)
                .map_err(|_| CsrError::Ecdsa)
        }
        SigKind::Ed25519 => {
            if key_kind != KeyKind::Ed25519 {
                return mismatch("Ed25519");
            }
            signature::UnparsedPublicKey::new(&signature::ED25519, &key)
                .verify(signed, &sig)
                .map_err(|_| CsrError::Ed25519)
        }
    }
}

/// kube's `validateCSR`: the message of the error, if any.
pub(super) fn check_csr(pem: &[u8]) -> Result<(), CsrError> {
    match pem_decode(pem) {
        Some((block, _)) if block.kind == "CERTIFICATE REQUEST" => check_csr_der(&block.der),
        _ => Err(CsrError::NotRequestPem),
    }
}

/// Whether DER bytes have the shape of an X.509 certificate.
fn certificate_shape(der: &[u8]) -> Result<(), &'static str> {
    let malformed = "x509: malformed certificate";
    let (outer, rest) = expect(der, SEQUENCE).map_err(|_| malformed)?;
    if !rest.is_empty() {
        return Err("x509: trailing data");
    }
    let (_, r) = expect(outer.contents, SEQUENCE).map_err(|_| malformed)?;
    let (_, r) = expect(r, SEQUENCE).map_err(|_| malformed)?;
    expect(r, BIT_STRING).map_err(|_| malformed)?;
    Ok(())
}

/// kube's `validateCertificate` of `status.certificate`.
pub(super) fn check_certificate(pem: &[u8]) -> Result<(), CertificatesError> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut data = pem;
    let mut blocks = 0;
    while let Some((block, rest)) = pem_decode(data) {
        if block.kind != "CERTIFICATE" {
            return Err(CertificatesError::NotCertificate(block.kind));
        }
        if block.has_headers {
            return Err(CertificatesError::Headers);
        }
        blocks += 1;
        certificate_shape(&block.der).map_err(CertificatesError::Shape)?;
        data = rest;
    }
    if blocks == 0 {
        return Err(CertificatesError::Empty);
    }
    Ok(())
}
