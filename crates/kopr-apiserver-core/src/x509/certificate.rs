//! Reading X.509 certificates: what kube looks at in a client certificate
//! (subject, serial number, key identifiers) and in the signing CA
//! (subject as issued, validity end, key identifier, signature algorithm).

use super::der::{self, OCTET_STRING, OID, SEQUENCE};
use super::name::{Name, NameError};

/// `2.5.29.14`, subjectKeyIdentifier.
const SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1d, 0x0e];
/// `2.5.29.35`, authorityKeyIdentifier.
const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];

/// The parts of a certificate kube reads.
#[derive(Debug, Clone)]
pub struct Certificate {
    /// The serial number's contents octets (two's complement, big-endian).
    pub serial: Vec<u8>,
    /// The subject as encoded (the whole `Name`).
    pub raw_subject: Vec<u8>,
    /// The subject's string attributes.
    pub subject: Name,
    /// The DER SubjectPublicKeyInfo.
    pub public_key_info: Vec<u8>,
    /// The end of validity.
    pub not_after: jiff::Timestamp,
    /// The subjectKeyIdentifier, if any.
    pub subject_key_id: Option<Vec<u8>>,
    /// The keyIdentifier of the authorityKeyIdentifier, if any.
    pub authority_key_id: Option<Vec<u8>>,
    /// The outer signatureAlgorithm (the whole AlgorithmIdentifier).
    pub signature_algorithm: Vec<u8>,
}

/// Why a certificate could not be read; the messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    /// The DER structure is not a certificate's (`encoding/asn1`'s message).
    #[error("x509: malformed certificate: {0}")]
    Malformed(&'static str),
    /// The end of validity is not a time.
    #[error("{0}")]
    Time(&'static str),
    /// The subject cannot be read.
    #[error(transparent)]
    Subject(#[from] NameError),
}

/// Reads a DER certificate.
///
/// # Errors
/// When it is not a certificate.
pub fn parse(der: &[u8]) -> Result<Certificate, CertificateError> {
    let malformed = CertificateError::Malformed;
    let (outer, _) = der::expect(der, SEQUENCE).map_err(malformed)?;
    let (tbs, r) = der::expect(outer.contents, SEQUENCE).map_err(malformed)?;
    let (signature_algorithm, _) = der::expect(r, SEQUENCE).map_err(malformed)?;
    let mut r = tbs.contents;
    if let Ok((_, after)) = der::expect(r, der::context(0)) {
        r = after;
    }
    let (serial, r) = der::expect(r, der::INTEGER).map_err(malformed)?;
    let (_, r) = der::expect(r, SEQUENCE).map_err(malformed)?;
    let (_issuer, r) = der::expect(r, SEQUENCE).map_err(malformed)?;
    let (validity, r) = der::expect(r, SEQUENCE).map_err(malformed)?;
    let (subject, mut r) = der::expect(r, SEQUENCE).map_err(malformed)?;
    let (spki, rest) = der::expect(r, SEQUENCE).map_err(malformed)?;
    r = rest;
    let (_not_before, after) = der::read(validity.contents).map_err(malformed)?;
    let (not_after, _) = der::read(after).map_err(malformed)?;
    let not_after = der::read_time(&not_after).map_err(CertificateError::Time)?;
    let mut cert = Certificate {
        serial: serial.contents.to_vec(),
        raw_subject: subject.raw.to_vec(),
        subject: Name::parse(subject.raw)?,
        public_key_info: spki.raw.to_vec(),
        not_after,
        subject_key_id: None,
        authority_key_id: None,
        signature_algorithm: signature_algorithm.raw.to_vec(),
    };
    for element in der::elements(r).map_err(malformed)? {
        if element.tag != der::context(3) {
            continue;
        }
        let (extensions, _) = der::expect(element.contents, SEQUENCE).map_err(malformed)?;
        for extension in der::elements(extensions.contents).map_err(malformed)? {
            let (id, rest) = der::expect(extension.contents, OID).map_err(malformed)?;
            let rest = match der::expect(rest, der::BOOLEAN) {
                Ok((_, after)) => after,
                Err(_) => rest,
            };
            let (value, _) = der::expect(rest, OCTET_STRING).map_err(malformed)?;
            if id.contents == SUBJECT_KEY_ID {
                let (key_id, _) = der::expect(value.contents, OCTET_STRING).map_err(malformed)?;
                cert.subject_key_id = Some(key_id.contents.to_vec());
            } else if id.contents == AUTHORITY_KEY_ID {
                let (seq, _) = der::expect(value.contents, SEQUENCE).map_err(malformed)?;
                cert.authority_key_id = der::elements(seq.contents)
                    .map_err(malformed)?
                    .into_iter()
                    .find(|e| e.tag == 0x80)
                    .map(|e| e.contents.to_vec());
            }
        }
    }
    Ok(cert)
}

/// kube's `certificateIdentifier` of a client certificate for log lines:
/// `SN=<decimal>, SKID=<hex>, AKID=<hex>`.
pub fn identifier(cert: &Certificate) -> String {
    format!(
        "SN={}, SKID={}, AKID={}",
        decimal(&cert.serial),
        colon_hex(cert.subject_key_id.as_deref().unwrap_or_default()),
        colon_hex(cert.authority_key_id.as_deref().unwrap_or_default()),
    )
}

fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A non-negative big-endian integer in decimal.
fn decimal(bytes: &[u8]) -> String {
    let mut digits: Vec<u8> = Vec::new();
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    while !number.is_empty() {
        let mut remainder = 0u32;
        let mut quotient = Vec::with_capacity(number.len());
        for byte in &number {
            let value = (remainder << 8) | u32::from(*byte);
            let q = (value / 10) as u8;
            remainder = value % 10;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(q);
            }
        }
        digits.push(b'0' + remainder as u8);
        number = quotient;
    }
    if digits.is_empty() {
        return "0".into();
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_numbers_print_in_decimal() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0x01, 0x00]), "256");
        assert_eq!(
            decimal(&[0xff; 9]),
            (u128::from(u64::MAX) * 256 + 255).to_string()
        );
        assert_eq!(colon_hex(&[0xab, 0x01]), "AB:01");
    }
}
