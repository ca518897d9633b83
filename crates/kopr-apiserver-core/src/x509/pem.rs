//! PEM blocks as Go's `encoding/pem` reads and writes them: the first
//! well-formed block of some text (`pem.Decode`), and a block written with
//! 64-character lines (`pem.EncodeToMemory`).

use base64::Engine;

/// One PEM block: its type, whether it had headers, and its bytes.
pub struct PemBlock {
    /// The type (`CERTIFICATE`, `CERTIFICATE REQUEST`, ...).
    pub kind: String,
    /// Whether `Key: value` header lines preceded the base64 body.
    pub has_headers: bool,
    /// The decoded body.
    pub der: Vec<u8>,
}

/// Like Go's `pem.Decode`: the first well-formed block and the rest.
pub fn decode(data: &[u8]) -> Option<(PemBlock, &[u8])> {
    let text = data;
    let mut from = 0;
    loop {
        let begin = find(&text[from..], b"-----BEGIN ")? + from;
        if begin != 0 && text[begin - 1] != b'\n' {
            from = begin + 1;
            continue;
        }
        let after = begin + b"-----BEGIN ".len();
        let line_end = text[after..].iter().position(|b| *b == b'\n')? + after;
        let type_line = trim_cr(&text[after..line_end]);
        let Some(kind) = type_line.strip_suffix(b"-----") else {
            from = begin + 1;
            continue;
        };
        let kind = String::from_utf8_lossy(kind).into_owned();
        let end_marker = format!("-----END {kind}-----");
        let body_start = line_end + 1;
        let Some(end) = find(&text[body_start..], end_marker.as_bytes()).map(|p| p + body_start)
        else {
            from = begin + 1;
            continue;
        };
        let body = &text[body_start..end];
        let (has_headers, b64) = split_headers(body);
        let cleaned: Vec<u8> = b64
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        match base64::engine::general_purpose::STANDARD.decode(&cleaned) {
            Ok(der) => {
                let mut rest = end + end_marker.len();
                // The end line's newline belongs to the block.
                if text.get(rest) == Some(&b'\r') {
                    rest += 1;
                }
                if text.get(rest) == Some(&b'\n') {
                    rest += 1;
                }
                return Some((
                    PemBlock {
                        kind,
                        has_headers,
                        der,
                    },
                    &text[rest..],
                ));
            }
            Err(_) => from = begin + 1,
        }
    }
}

/// Go's `pem.EncodeToMemory` of a block without headers.
pub fn encode(kind: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {kind}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}-----\n"));
    out
}

fn trim_cr(s: &[u8]) -> &[u8] {
    s.strip_suffix(b"\r").unwrap_or(s)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Splits `Key: value` header lines (up to a blank line) from the body.
fn split_headers(body: &[u8]) -> (bool, &[u8]) {
    let first_line = body.split(|b| *b == b'\n').next().unwrap_or(&[]);
    if !first_line.contains(&b':') {
        return (false, body);
    }
    match find(body, b"\n\n").or_else(|| find(body, b"\n\r\n")) {
        Some(p) => (true, &body[p..]),
        None => (true, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_written_is_read_back() {
        let der: Vec<u8> = (0..=200).collect();
        let text = encode("CERTIFICATE", &der);
        assert!(text.lines().all(|l| l.len() <= 64));
        let (block, rest) = decode(text.as_bytes()).expect("a block");
        assert_eq!((block.kind.as_str(), block.der), ("CERTIFICATE", der));
        assert!(rest.is_empty());
    }
}
