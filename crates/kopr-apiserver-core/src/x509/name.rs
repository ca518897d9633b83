//! Subject names as Go's `crypto/x509/pkix.Name` holds them: the string
//! attributes kube reads (common name, organizations, the user UID
//! attribute), read from a DER `Name` as `FillFromRDNSequence` does, and
//! written back as `ToRDNSequence` and `asn1.Marshal` write a certificate's
//! subject (fixed attribute order, one RDN per attribute type).

use super::der::{self, Der, OID, SEQUENCE, SET};

/// `2.5.4.x`, the X.520 attribute types.
const X520: [u8; 2] = [0x55, 0x04];
/// kube's user UID attribute, `1.3.6.1.4.1.57683.2`.
const UID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xc2, 0x53, 0x02];

/// The string attributes of a name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Name {
    /// `CN`; the last one when there are several, as in Go.
    pub common_name: String,
    /// `serialNumber`.
    pub serial_number: String,
    /// `C`.
    pub country: Vec<String>,
    /// `ST`.
    pub province: Vec<String>,
    /// `L`.
    pub locality: Vec<String>,
    /// `street`.
    pub street_address: Vec<String>,
    /// `postalCode`.
    pub postal_code: Vec<String>,
    /// `O`, in order.
    pub organization: Vec<String>,
    /// `OU`.
    pub organizational_unit: Vec<String>,
    /// The values of the UID attribute; `None` for one that is not a string.
    pub uids: Vec<Option<String>>,
}

/// Why a name could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("x509: invalid RDN value: {0}")]
pub struct NameError(pub String);

impl Name {
    /// Reads a DER `Name` (the whole SEQUENCE).
    ///
    /// # Errors
    /// When it is not a sequence of sets of attributes, or a string value
    /// is malformed.
    pub fn parse(raw: &[u8]) -> Result<Name, NameError> {
        let bad = |e: &str| NameError(e.to_string());
        let (seq, _) = der::expect(raw, SEQUENCE).map_err(bad)?;
        let mut name = Name::default();
        for rdn in der::elements(seq.contents).map_err(bad)? {
            if rdn.tag != SET {
                return Err(bad(der::STRUCTURE));
            }
            for atv in der::elements(rdn.contents).map_err(bad)? {
                let (oid, rest) = der::expect(atv.contents, OID).map_err(bad)?;
                let (value, _) = der::read(rest).map_err(bad)?;
                name.add(oid.contents, &value)?;
            }
        }
        Ok(name)
    }

    fn add(&mut self, oid: &[u8], value: &Der<'_>) -> Result<(), NameError> {
        let text = string_value(value)?;
        if oid == UID {
            self.uids.push(text);
            return Ok(());
        }
        let (Some(text), Some(&[kind])) = (text, oid.strip_prefix(&X520[..])) else {
            return Ok(());
        };
        match kind {
            3 => self.common_name = text,
            5 => self.serial_number = text,
            6 => self.country.push(text),
            7 => self.locality.push(text),
            8 => self.province.push(text),
            9 => self.street_address.push(text),
            10 => self.organization.push(text),
            11 => self.organizational_unit.push(text),
            17 => self.postal_code.push(text),
            _ => {}
        }
        Ok(())
    }

    /// The DER `Name` Go writes for this name: C, ST, L, street,
    /// postalCode, O, OU, CN, serialNumber, each type's values in one RDN.
    pub fn encode(&self) -> Vec<u8> {
        let one = |s: &String| std::slice::from_ref(s).to_vec();
        let cn = if self.common_name.is_empty() {
            Vec::new()
        } else {
            one(&self.common_name)
        };
        let serial = if self.serial_number.is_empty() {
            Vec::new()
        } else {
            one(&self.serial_number)
        };
        let groups: [(u8, &[String]); 9] = [
            (6, &self.country),
            (8, &self.province),
            (7, &self.locality),
            (9, &self.street_address),
            (17, &self.postal_code),
            (10, &self.organization),
            (11, &self.organizational_unit),
            (3, &cn),
            (5, &serial),
        ];
        let rdns: Vec<Vec<u8>> = groups
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(kind, values)| {
                let oid = der::tlv(OID, &[X520[0], X520[1], *kind]);
                let atvs: Vec<Vec<u8>> = values
                    .iter()
                    .map(|v| der::sequence(&[&oid, &string(v)]))
                    .collect();
                der::set_of(&atvs)
            })
            .collect();
        let parts: Vec<&[u8]> = rdns.iter().map(Vec::as_slice).collect();
        der::sequence(&parts)
    }
}

/// Go's string value of an attribute: `Some` for the ASN.1 string types,
/// `None` for other types.
fn string_value(d: &Der<'_>) -> Result<Option<String>, NameError> {
    let bad = |what: &str| Err(NameError(format!("invalid {what}")));
    let bytes = d.contents;
    let text = match d.tag {
        // UTF8String
        0x0c => match std::str::from_utf8(bytes) {
            Ok(s) => s.to_string(),
            Err(_) => return bad("UTF-8 string"),
        },
        // PrintableString (Go's parser lets `*` and `&` through)
        0x13 => {
            if !bytes
                .iter()
                .all(|b| printable(*b) || *b == b'*' || *b == b'&')
            {
                return bad("PrintableString");
            }
            String::from_utf8_lossy(bytes).into_owned()
        }
        // IA5String
        0x16 => {
            if !bytes.is_ascii() {
                return bad("IA5String");
            }
            String::from_utf8_lossy(bytes).into_owned()
        }
        // NumericString
        0x12 => {
            if !bytes.iter().all(|b| b.is_ascii_digit() || *b == b' ') {
                return bad("NumericString");
            }
            String::from_utf8_lossy(bytes).into_owned()
        }
        // T61String: Go takes the bytes as they are.
        0x14 => String::from_utf8_lossy(bytes).into_owned(),
        // BMPString: UTF-16, big-endian.
        0x1e => {
            if !bytes.len().is_multiple_of(2) {
                return bad("BMPString");
            }
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            match String::from_utf16(&units) {
                Ok(s) => s,
                Err(_) => return bad("BMPString"),
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(text))
}

/// The characters Go's `asn1` writes as a PrintableString.
fn printable(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&b)
}

/// A string as Go's `asn1.Marshal` writes one without a declared type:
/// a PrintableString when every character allows it, else UTF8String.
fn string(s: &str) -> Vec<u8> {
    let tag = if s.bytes().all(printable) { 0x13 } else { 0x0c };
    der::tlv(tag, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_and_written_as_go_does() {
        let name = Name {
            common_name: "alice".into(),
            organization: vec!["devs".into(), "ops & co".into()],
            ..Name::default()
        };
        let encoded = name.encode();
        assert_eq!(Name::parse(&encoded), Ok(name));
        // O before CN; both organizations in one RDN; `&` makes a UTF8String.
        let (seq, _) = der::expect(&encoded, SEQUENCE).expect("sequence");
        let rdns = der::elements(seq.contents).expect("rdns");
        assert_eq!(rdns.len(), 2);
        assert_eq!(der::elements(rdns[0].contents).expect("atvs").len(), 2);
        assert!(encoded.windows(2).any(|w| w == [0x0c, 8]));
        assert_eq!(Name::default().encode(), [0x30, 0]);
    }

    #[test]
    fn the_uid_attribute_and_non_strings_are_kept_apart() {
        let uid = der::sequence(&[&der::tlv(OID, UID), &string("u-1")]);
        let number = der::sequence(&[&der::tlv(OID, &[0x55, 4, 3]), &der::tlv(2, &[7])]);
        let raw = der::sequence(&[&der::set_of(&[uid]), &der::set_of(&[number])]);
        let name = Name::parse(&raw).expect("name");
        assert_eq!(name.uids, [Some("u-1".to_string())]);
        assert_eq!(name.common_name, "");
    }
}
