//! Compact JWS tokens signed with ES256 (ECDSA P-256, SHA-256), the form of
//! kube's service-account tokens when its signing key is an EC key.
//!
//! Written on `ring`, which the server already uses for TLS: the JWT crates
//! on crates.io bring a second crypto stack (aws-lc or RustCrypto) for the
//! two operations needed here.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// Errors loading a signing key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key is not a PKCS#8 P-256 key.
    #[error("service-account signing key: {0}")]
    Rejected(String),
}

/// A signing key and the key id kube derives from its public half.
pub struct Signer {
    pair: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

impl Signer {
    /// The signer of a PKCS#8 (DER) P-256 private key whose public key's
    /// SubjectPublicKeyInfo is `spki_der` (the key id is its SHA-256,
    /// base64url, as kube computes it).
    ///
    /// # Errors
    /// [`KeyError`] when the key is not a P-256 PKCS#8 key.
    pub fn from_pkcs8(pkcs8: &[u8], spki_der: &[u8]) -> Result<Signer, KeyError> {
        let rng = SystemRandom::new();
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
                .map_err(|e| KeyError::Rejected(e.to_string()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, spki_der);
        Ok(Signer {
            pair,
            kid: URL_SAFE_NO_PAD.encode(digest.as_ref()),
            rng,
        })
    }

    /// The key id put in every token's header.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// A signed token carrying `claims`; `None` only if signing fails.
    pub fn sign(&self, claims: &Value) -> Option<String> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.pair.sign(&self.rng, signing_input.as_bytes()).ok()?;
        Some(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(sig.as_ref())
        ))
    }

    /// The claims of `token` if it is a well-formed ES256 token this key
    /// signed; nothing else (expiry, audience) is checked here.
    pub fn verify(&self, token: &str) -> Option<Value> {
        let mut parts = token.split('.');
        let (header, claims, sig) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
        if header["alg"] != "ES256" {
            return None;
        }
        let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.pair.public_key().as_ref(),
        );
        let signed = &token[..header_and_claims_len(token)?];
        public.verify(signed.as_bytes(), &sig).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()
    }
}

/// The length of `header.claims` in a compact token.
fn header_and_claims_len(token: &str) -> Option<usize> {
    token.rfind('.')
}

/// Whether `token` looks like a JWT (three dot-separated parts whose first
/// decodes to a JSON object), so other token authenticators can skip it.
pub fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let Some(header) = parts.next() else {
        return false;
    };
    parts.count() == 2
        && URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
            .is_some_and(|h| h.is_object())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> Signer {
        let key = rcgen::KeyPair::generate().expect("key");
        use rcgen::PublicKeyData;
        Signer::from_pkcs8(key.serialized_der(), &key.subject_public_key_info()).expect("signer")
    }

    #[test]
    fn signed_tokens_verify_and_tampered_ones_do_not() {
        let s = signer();
        let token = s.sign(&json!({"sub": "a"})).expect("signed");
        assert!(looks_like_jwt(&token));
        assert_eq!(s.verify(&token), Some(json!({"sub": "a"})));
        let (rest, _) = token.rsplit_once('.').expect("three parts");
        let forged_claims = URL_SAFE_NO_PAD.encode(r#"{"sub":"b"}"#);
        let (header, _) = rest.split_once('.').expect("header");
        let sig = token.rsplit_once('.').expect("sig").1;
        assert_eq!(s.verify(&format!("{header}.{forged_claims}.{sig}")), None);
        assert_eq!(signer().verify(&token), None, "another key's token");
        assert_eq!(s.verify("a.b"), None);
        assert_eq!(s.verify("a.b.c.d"), None);
        assert!(!looks_like_jwt("plain-token"));
    }
}
