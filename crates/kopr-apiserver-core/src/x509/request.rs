//! PKCS#10 certificate requests as kube's `ParseCSR` reads a
//! CertificateSigningRequest's `spec.request`: the subject, the public key
//! (kept as its DER SubjectPublicKeyInfo) and the subject alternative names
//! of the extension request, with Go's errors. The signature itself is
//! checked when the CSR is created (`validation::kinds::csr_der`).

use std::net::IpAddr;

use super::der::{self, BIT_STRING, BOOLEAN, OCTET_STRING, OID, SEQUENCE};
use super::name::{Name, NameError};

/// `1.2.840.113549.1.9.14`, PKCS#9 extensionRequest.
const EXTENSION_REQUEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];
/// `2.5.29.17`, subjectAltName.
pub(super) const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

const RSA_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const EC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const ED25519_KEY: &[u8] = &[0x2b, 0x65, 0x70];
/// The named curves Go's `crypto/x509` reads: P-224, P-256, P-384, P-521.
const CURVES: [&[u8]; 4] = [
    &[0x2b, 0x81, 0x04, 0x00, 0x21],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07],
    &[0x2b, 0x81, 0x04, 0x00, 0x22],
    &[0x2b, 0x81, 0x04, 0x00, 0x23],
];

/// The kind of a request's public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// RSA.
    Rsa,
    /// ECDSA on a curve Go supports.
    Ecdsa,
    /// Ed25519.
    Ed25519,
    /// A key Go parses as unknown (it cannot be certified).
    Unknown,
}

/// What a certificate request asks for.
#[derive(Debug, Clone)]
pub struct Request {
    /// The subject.
    pub subject: Name,
    /// The DER SubjectPublicKeyInfo.
    pub public_key_info: Vec<u8>,
    /// The key's kind.
    pub key: KeyKind,
    /// DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// Email subject alternative names.
    pub emails: Vec<String>,
    /// IP subject alternative names.
    pub ips: Vec<IpAddr>,
    /// URI subject alternative names.
    pub uris: Vec<String>,
}

/// Why a certificate request could not be read; the messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The first PEM block is missing or not a `CERTIFICATE REQUEST`.
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotRequestPem,
    /// The DER structure is malformed (`encoding/asn1`'s message).
    #[error("{0}")]
    Der(&'static str),
    /// The subject cannot be read.
    #[error(transparent)]
    Subject(#[from] NameError),
    /// An ECDSA key without a named curve.
    #[error("x509: failed to parse ECDSA parameters as named curve")]
    EcdsaParameters,
    /// An ECDSA key on a curve Go does not support.
    #[error("x509: unsupported elliptic curve")]
    UnsupportedCurve,
    /// A string subject alternative name that is not IA5 (the name's kind).
    #[error("x509: SAN {0} is malformed")]
    MalformedAltName(&'static str),
    /// An IP subject alternative name of neither 4 nor 16 bytes.
    #[error("x509: cannot parse IP address of length {0}")]
    IpLength(usize),
}

impl From<&'static str> for RequestError {
    fn from(message: &'static str) -> Self {
        RequestError::Der(message)
    }
}

/// kube's `ParseCSR`: the first PEM block must be a `CERTIFICATE REQUEST`.
///
/// # Errors
/// Go's message for what is wrong.
pub fn parse_pem(pem: &[u8]) -> Result<Request, RequestError> {
    match super::pem::decode(pem) {
        Some((block, _)) if block.kind == "CERTIFICATE REQUEST" => parse(&block.der),
        _ => Err(RequestError::NotRequestPem),
    }
}

/// `x509.ParseCertificateRequest` of DER bytes.
///
/// # Errors
/// Go's message for what is wrong.
pub fn parse(der: &[u8]) -> Result<Request, RequestError> {
    let (outer, _) = der::expect(der, SEQUENCE)?;
    let (info, _) = der::expect(outer.contents, SEQUENCE)?;
    let (_version, r) = der::expect(info.contents, der::INTEGER)?;
    let (subject, r) = der::expect(r, SEQUENCE)?;
    let (spki, r) = der::expect(r, SEQUENCE)?;
    let subject = Name::parse(subject.raw)?;
    let key = key_kind(spki.contents)?;
    let mut request = Request {
        subject,
        public_key_info: spki.raw.to_vec(),
        key,
        dns_names: Vec::new(),
        emails: Vec::new(),
        ips: Vec::new(),
        uris: Vec::new(),
    };
    // Attributes: [0] IMPLICIT SET OF Attribute (may be absent).
    if let Ok((attributes, _)) = der::expect(r, der::context(0)) {
        for attribute in der::elements(attributes.contents)? {
            let (oid, values) = der::expect(attribute.contents, OID)?;
            if oid.contents != EXTENSION_REQUEST {
                continue;
            }
            let (values, _) = der::expect(values, der::SET)?;
            for value in der::elements(values.contents)? {
                for extension in der::elements(value.contents)? {
                    let (id, rest) = der::expect(extension.contents, OID)?;
                    if id.contents == SUBJECT_ALT_NAME {
                        let rest = match der::expect(rest, BOOLEAN) {
                            Ok((_, after)) => after,
                            Err(_) => rest,
                        };
                        let (value, _) = der::expect(rest, OCTET_STRING)?;
                        read_alt_names(value.contents, &mut request)?;
                    }
                }
            }
        }
    }
    Ok(request)
}

fn key_kind(spki: &[u8]) -> Result<KeyKind, RequestError> {
    let (oid, params) = der::algorithm(spki)?;
    let (_, after) = der::expect(spki, SEQUENCE)?;
    der::expect(after, BIT_STRING)?;
    Ok(match oid {
        RSA_KEY => KeyKind::Rsa,
        ED25519_KEY => KeyKind::Ed25519,
        EC_KEY => {
            let (curve, _) = der::expect(params, OID).map_err(|_| RequestError::EcdsaParameters)?;
            if !CURVES.contains(&curve.contents) {
                return Err(RequestError::UnsupportedCurve);
            }
            KeyKind::Ecdsa
        }
        _ => KeyKind::Unknown,
    })
}

/// Go's `parseSANExtension`.
fn read_alt_names(value: &[u8], request: &mut Request) -> Result<(), RequestError> {
    let (names, _) = der::expect(value, SEQUENCE)?;
    let ia5 = |bytes: &[u8], what: &'static str| {
        if bytes.is_ascii() {
            Ok(String::from_utf8_lossy(bytes).into_owned())
        } else {
            Err(RequestError::MalformedAltName(what))
        }
    };
    for name in der::elements(names.contents)? {
        let data = name.contents;
        match name.tag {
            0x81 => request.emails.push(ia5(data, "rfc822Name")?),
            0x82 => request.dns_names.push(ia5(data, "dNSName")?),
            0x86 => request.uris.push(ia5(data, "uniformResourceIdentifier")?),
            0x87 => {
                let ip = if let Ok(v4) = <[u8; 4]>::try_from(data) {
                    IpAddr::from(v4)
                } else if let Ok(v6) = <[u8; 16]>::try_from(data) {
                    IpAddr::from(v6)
                } else {
                    return Err(RequestError::IpLength(data.len()));
                };
                request.ips.push(ip);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Go's `marshalSANs`: DNS names, emails, IPs (IPv4 in 4 bytes), URIs.
pub(super) fn alt_names(request: &Request) -> Option<Vec<u8>> {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    parts.extend(
        request
            .dns_names
            .iter()
            .map(|n| der::tlv(0x82, n.as_bytes())),
    );
    parts.extend(request.emails.iter().map(|n| der::tlv(0x81, n.as_bytes())));
    for ip in &request.ips {
        let bytes = match ip {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.octets().to_vec(),
                None => v6.octets().to_vec(),
            },
        };
        parts.push(der::tlv(0x87, &bytes));
    }
    parts.extend(request.uris.iter().map(|n| der::tlv(0x86, n.as_bytes())));
    if parts.is_empty() {
        return None;
    }
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    Some(der::sequence(&slices))
}
