//! DER elements: reading one (tag, contents, whole encoding) with the
//! errors Go's `encoding/asn1` gives, and writing the few shapes
//! certificates are made of.

/// A DER element: tag, contents, and the whole encoding.
#[derive(Debug, Clone, Copy)]
pub struct Der<'a> {
    /// The tag byte (single-byte tags only, as X.509 uses).
    pub tag: u8,
    /// The contents octets.
    pub contents: &'a [u8],
    /// The whole encoding: tag, length and contents.
    pub raw: &'a [u8],
}

/// Go's error for input that ends inside an element.
pub const TRUNCATED: &str = "asn1: syntax error: data truncated";
/// Go's error for an element of another type than expected.
pub const STRUCTURE: &str = "asn1: structure error: tags don't match";

/// `SEQUENCE`.
pub const SEQUENCE: u8 = 0x30;
/// `SET`.
pub const SET: u8 = 0x31;
/// `OBJECT IDENTIFIER`.
pub const OID: u8 = 0x06;
/// `BIT STRING`.
pub const BIT_STRING: u8 = 0x03;
/// `OCTET STRING`.
pub const OCTET_STRING: u8 = 0x04;
/// `INTEGER`.
pub const INTEGER: u8 = 0x02;
/// `BOOLEAN`.
pub const BOOLEAN: u8 = 0x01;
/// `NULL`.
pub const NULL: u8 = 0x05;
/// `UTCTime`.
pub const UTC_TIME: u8 = 0x17;
/// `GeneralizedTime`.
pub const GENERALIZED_TIME: u8 = 0x18;

/// The tag of context-specific constructed element `[n]`.
pub const fn context(n: u8) -> u8 {
    0xa0 | n
}

/// Reads one element from the front of `input`; returns it and the rest.
pub fn read(input: &[u8]) -> Result<(Der<'_>, &[u8]), &'static str> {
    let tag = *input.first().ok_or(TRUNCATED)?;
    let first_len = *input.get(1).ok_or(TRUNCATED)?;
    let (len, header) = if first_len < 0x80 {
        (first_len as usize, 2)
    } else {
        let n = (first_len & 0x7f) as usize;
        if n == 0 || n > 4 {
            return Err("asn1: syntax error: indefinite length found (not DER)");
        }
        let bytes = input.get(2..2 + n).ok_or(TRUNCATED)?;
        let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, 2 + n)
    };
    let end = header.checked_add(len).ok_or(TRUNCATED)?;
    let raw = input.get(..end).ok_or(TRUNCATED)?;
    Ok((
        Der {
            tag,
            contents: &raw[header..],
            raw,
        },
        &input[end..],
    ))
}

/// Reads one element of type `tag` from the front of `input`.
pub fn expect(input: &[u8], tag: u8) -> Result<(Der<'_>, &[u8]), &'static str> {
    let (d, rest) = read(input)?;
    if d.tag != tag {
        return Err(STRUCTURE);
    }
    Ok((d, rest))
}

/// Every element of `contents`, in order.
pub fn elements(mut contents: &[u8]) -> Result<Vec<Der<'_>>, &'static str> {
    let mut out = Vec::new();
    while !contents.is_empty() {
        let (d, rest) = read(contents)?;
        out.push(d);
        contents = rest;
    }
    Ok(out)
}

/// An AlgorithmIdentifier: its OID bytes and its parameters' encoding.
pub fn algorithm(input: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    let (seq, _) = expect(input, SEQUENCE)?;
    let (oid, params) = expect(seq.contents, OID)?;
    Ok((oid.contents, params))
}

/// The bytes of a BIT STRING without unused bits.
pub fn bit_string(d: &Der<'_>) -> Result<Vec<u8>, &'static str> {
    match d.contents.split_first() {
        Some((0, rest)) => Ok(rest.to_vec()),
        _ => Err("asn1: structure error: invalid bit string"),
    }
}

/// An element of `tag` around `contents`.
pub fn tlv(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// A constructed element of `tag` holding `parts` in order.
pub fn constructed(tag: u8, parts: &[&[u8]]) -> Vec<u8> {
    tlv(tag, &parts.concat())
}

/// A SEQUENCE of `parts`.
pub fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    constructed(SEQUENCE, parts)
}

/// A SET OF `parts`, sorted by their encodings as DER (and Go) wants.
pub fn set_of(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut sorted: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    sorted.sort();
    constructed(SET, &sorted)
}

/// A non-negative INTEGER from its big-endian magnitude.
pub fn unsigned(magnitude: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = magnitude.iter().copied().skip_while(|b| *b == 0).collect();
    let mut contents = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|b| b & 0x80 != 0) {
        contents.push(0);
    }
    contents.extend(trimmed);
    tlv(INTEGER, &contents)
}

/// A BIT STRING of whole bytes, or of `bits` bits when given.
pub fn bits(bytes: &[u8], bits: Option<usize>) -> Vec<u8> {
    let unused = bits.map_or(0, |n| bytes.len() * 8 - n.min(bytes.len() * 8));
    let mut contents = vec![unused as u8];
    contents.extend_from_slice(bytes);
    tlv(BIT_STRING, &contents)
}

/// A time as Go's `encoding/asn1` writes it: UTCTime from 1950 to 2049,
/// GeneralizedTime otherwise, to the second, in UTC.
pub fn time(t: jiff::Timestamp) -> Vec<u8> {
    let year = t.to_zoned(jiff::tz::TimeZone::UTC).year();
    if (1950..2050).contains(&year) {
        tlv(UTC_TIME, t.strftime("%y%m%d%H%M%SZ").to_string().as_bytes())
    } else {
        tlv(
            GENERALIZED_TIME,
            t.strftime("%Y%m%d%H%M%SZ").to_string().as_bytes(),
        )
    }
}

/// Reads a UTCTime or GeneralizedTime (`Z` form, as certificates have).
pub fn read_time(d: &Der<'_>) -> Result<jiff::Timestamp, &'static str> {
    const BAD: &str = "x509: malformed time";
    let text = std::str::from_utf8(d.contents).map_err(|_| BAD)?;
    let digits = text.strip_suffix('Z').ok_or(BAD)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BAD);
    }
    let (year, rest) = match (d.tag, digits.len()) {
        (UTC_TIME, 12) => {
            let yy: i16 = digits[..2].parse().map_err(|_| BAD)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &digits[2..])
        }
        (GENERALIZED_TIME, 14) => (digits[..4].parse().map_err(|_| BAD)?, &digits[4..]),
        _ => return Err(BAD),
    };
    let two = |i: usize| rest[i..i + 2].parse::<i8>().map_err(|_| BAD);
    let dt = jiff::civil::DateTime::new(year, two(0)?, two(2)?, two(4)?, two(6)?, two(8)?, 0)
        .map_err(|_| BAD)?;
    dt.to_zoned(jiff::tz::TimeZone::UTC)
        .map(|z| z.timestamp())
        .map_err(|_| BAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_integers_are_minimal() {
        assert_eq!(tlv(OCTET_STRING, &[1, 2]), [4, 2, 1, 2]);
        let long = tlv(OCTET_STRING, &[0; 300]);
        assert_eq!(&long[..4], &[4, 0x82, 0x01, 0x2c]);
        assert_eq!(unsigned(&[0, 0, 5]), [2, 1, 5]);
        assert_eq!(unsigned(&[0x80]), [2, 2, 0, 0x80]);
        assert_eq!(unsigned(&[]), [2, 1, 0]);
    }

    #[test]
    fn times_round_trip_in_both_forms() {
        for text in ["2024-05-06T07:08:09Z", "2051-01-02T03:04:05Z"] {
            let t: jiff::Timestamp = text.parse().expect("timestamp");
            let encoded = time(t);
            let (d, _) = read(&encoded).expect("element");
            assert_eq!(read_time(&d), Ok(t));
        }
        assert_eq!(
            time("2024-05-06T07:08:09Z".parse().expect("t"))[0],
            UTC_TIME
        );
    }
}
