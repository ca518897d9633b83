//! Lenient IP and CIDR parsing as kube 1.32 validates addresses (k8s.io/utils
//! `ParseIPSloppy` / `ParseCIDRSloppy`: IPv4 parts may carry leading zeros),
//! plus the special-range checks of `ValidateNonSpecialIP`.

use std::net::Ipv6Addr;

/// A parsed address in 16-byte form (IPv4 as `::ffff:a.b.c.d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(pub(super) [u8; 16]);

impl Ip {
    /// Go's `To4`: the 4 bytes of an IPv4 (or IPv4-mapped) address.
    pub(super) fn to4(&self) -> Option<[u8; 4]> {
        let b = &self.0;
        if b[..10].iter().all(|&x| x == 0) && b[10] == 0xff && b[11] == 0xff {
            Some([b[12], b[13], b[14], b[15]])
        } else {
            None
        }
    }

    fn is_unspecified(&self) -> bool {
        self.to4() == Some([0, 0, 0, 0]) || self.0 == [0; 16]
    }

    fn is_loopback(&self) -> bool {
        match self.to4() {
            Some(v4) => v4[0] == 127,
            None => self.0 == Ipv6Addr::LOCALHOST.octets(),
        }
    }

    fn is_link_local_unicast(&self) -> bool {
        match self.to4() {
            Some(v4) => v4[0] == 169 && v4[1] == 254,
            None => self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80,
        }
    }

    fn is_link_local_multicast(&self) -> bool {
        match self.to4() {
            Some(v4) => v4[0] == 224 && v4[1] == 0 && v4[2] == 0,
            None => self.0[0] == 0xff && self.0[1] & 0x0f == 0x02,
        }
    }
}

fn parse_v4(s: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for slot in &mut out {
        let p = parts.next()?;
        if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let digits = p.trim_start_matches('0');
        if digits.len() > 3 {
            return None;
        }
        let n: u32 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        *slot = u8::try_from(n).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(out)
}

fn mapped(v4: [u8; 4]) -> Ip {
    let mut b = [0u8; 16];
    b[10] = 0xff;
    b[11] = 0xff;
    b[12..].copy_from_slice(&v4);
    Ip(b)
}

/// `ParseIPSloppy`: an IPv4 dotted quad (leading zeros allowed) or an IPv6
/// address; `None` when unparsable.
pub(super) fn parse_ip(s: &str) -> Option<Ip> {
    if s.contains(':') {
        s.parse::<Ipv6Addr>().ok().map(|a| Ip(a.octets()))
    } else {
        parse_v4(s).map(mapped)
    }
}

/// A parsed CIDR: the masked network bytes (4 for IPv4, 16 for IPv6) and
/// the prefix length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cidr {
    net: Vec<u8>,
    prefix: u32,
}

fn mask(bytes: &[u8], prefix: u32) -> Vec<u8> {
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let start = u32::try_from(i).unwrap_or(u32::MAX).saturating_mul(8);
            let keep = prefix.saturating_sub(start).min(8);
            if keep == 0 {
                0
            } else {
                b & (0xffu8 << (8 - keep))
            }
        })
        .collect()
}

/// `ParseCIDRSloppy`: `addr/len` with an IPv4 or IPv6 address.
pub(super) fn parse_cidr(s: &str) -> Option<Cidr> {
    let (addr, len) = s.split_once('/')?;
    if len.is_empty() || !len.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = len.trim_start_matches('0');
    let prefix: u32 = if digits.is_empty() {
        0
    } else if digits.len() > 3 {
        return None;
    } else {
        digits.parse().ok()?
    };
    let bytes: Vec<u8> = if addr.contains(':') {
        addr.parse::<Ipv6Addr>().ok()?.octets().to_vec()
    } else {
        parse_v4(addr)?.to_vec()
    };
    let bits = u32::try_from(bytes.len()).unwrap_or(0) * 8;
    if prefix > bits {
        return None;
    }
    Some(Cidr {
        net: mask(&bytes, prefix),
        prefix,
    })
}

impl Cidr {
    /// Whether `inner` is a strict subset of `self`, as NetworkPolicy's
    /// `ipBlock.except` requires (`Contains(inner.IP)` and a longer prefix).
    pub(super) fn strictly_contains(&self, inner: &Cidr) -> bool {
        self.net.len() == inner.net.len()
            && mask(&inner.net, self.prefix) == self.net
            && self.prefix < inner.prefix
    }
}

/// `ValidateNonSpecialIP`'s messages for an address (empty when fine).
pub(super) fn non_special_ip_errors(s: &str) -> Vec<String> {
    let Some(ip) = parse_ip(s) else {
        return vec!["must be a valid IP address".to_string()];
    };
    let mut out = Vec::new();
    if ip.is_unspecified() {
        out.push(format!("may not be unspecified ({s})"));
    }
    if ip.is_loopback() {
        out.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    if ip.is_link_local_unicast() {
        out.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    if ip.is_link_local_multicast() {
        out.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sloppy_parsing() {
        assert!(parse_ip("10.0.0.1").and_then(|i| i.to4()).is_some());
        assert_eq!(
            parse_ip("010.000.0.01").and_then(|i| i.to4()),
            Some([10, 0, 0, 1])
        );
        assert!(parse_ip("256.0.0.1").is_none());
        assert!(parse_ip("1.2.3").is_none());
        assert!(parse_ip("fd00::1").is_some_and(|i| i.to4().is_none()));
        assert!(parse_ip("::ffff:1.2.3.4").is_some_and(|i| i.to4().is_some()));
        assert!(parse_ip("fe80::1%eth0").is_none());
        assert!(parse_ip("").is_none());
    }

    #[test]
    fn cidrs() {
        let a = parse_cidr("10.0.0.0/8");
        let b = parse_cidr("10.1.0.0/16");
        assert!(a.is_some() && b.is_some());
        if let (Some(a), Some(b)) = (&a, &b) {
            assert!(a.strictly_contains(b));
            assert!(!b.strictly_contains(a));
            assert!(!a.strictly_contains(a));
        }
        assert_eq!(parse_cidr("10.0.0.1/8"), parse_cidr("10.0.0.0/8"));
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("10.0.0.0").is_none());
        assert!(parse_cidr("fd00::/8").is_some());
        let v6 = parse_cidr("::/0");
        let v4 = parse_cidr("10.0.0.0/8");
        if let (Some(v6), Some(v4)) = (v6, v4) {
            assert!(!v6.strictly_contains(&v4));
        }
    }

    #[test]
    fn special_ranges() {
        assert!(non_special_ip_errors("10.1.2.3").is_empty());
        assert_eq!(
            non_special_ip_errors("0.0.0.0"),
            vec!["may not be unspecified (0.0.0.0)"]
        );
        assert_eq!(
            non_special_ip_errors("::1"),
            vec!["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
        );
        assert_eq!(non_special_ip_errors("169.254.1.1").len(), 1);
        assert_eq!(non_special_ip_errors("224.0.0.5").len(), 1);
        assert_eq!(non_special_ip_errors("ff02::1").len(), 1);
        assert_eq!(
            non_special_ip_errors("x"),
            vec!["must be a valid IP address"]
        );
    }
}
