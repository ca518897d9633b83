//! Encryption at rest, configured as kube-apiserver's
//! `--encryption-provider-config` (`apiserver.config.k8s.io/v1`
//! EncryptionConfiguration): for each listed resource (`secrets`,
//! `deployments.apps`, `*.apps`, `*.*`), providers in order. The first
//! encrypts every write; reads try each by its prefix, so keys can rotate.
//!
//! Providers: `aescbc` (AES-CBC with PKCS#7 padding and a random IV, on
//! RustCrypto's `aes` and `cbc`), `aesgcm` (AES-GCM with a random nonce and
//! the storage key as authenticated data, on `ring`) and `identity` (plain
//! text). An encrypted value reads `k8s:enc:<provider>:v1:<key name>:` then
//! the IV or nonce and the ciphertext, as kube writes it. Plain values are
//! readable only where `identity` is among the providers, as in kube.

use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum EncryptionConfigError {
    /// The file could not be read.
    #[error("encryption provider config {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid EncryptionConfiguration.
    #[error("encryption provider config {path}: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        #[source]
        why: ConfigError,
    },
}

/// Why a text is not a usable EncryptionConfiguration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither YAML nor JSON of the expected shape.
    #[error("{0}")]
    Yaml(Box<serde_saphyr::Error>),
    /// Another kind, or another version.
    #[error("expected kind EncryptionConfiguration of apiVersion apiserver.config.k8s.io/v1")]
    NotConfiguration,
    /// A provider kube has that this server does not (`secretbox`, `kms`).
    #[error("the {0} provider is not supported; use aescbc or aesgcm")]
    Unsupported(&'static str),
    /// A provider entry naming no provider.
    #[error("a provider names none of aescbc, aesgcm, identity")]
    NoProvider,
    /// An entry without resources or without providers.
    #[error("every entry needs resources and providers")]
    EmptyEntry,
    /// A keyed provider without keys.
    #[error("{0}: at least one key is required")]
    NoKeys(&'static str),
    /// A secret that is not base64.
    #[error("{kind} key {name:?}: the secret is not base64: {source}")]
    NotBase64 {
        /// The provider.
        kind: &'static str,
        /// The key's name.
        name: String,
        /// Why.
        source: base64::DecodeError,
    },
    /// A key without a name, or with `:` in it.
    #[error("{kind} key {name:?}: a name without ':' is required")]
    KeyName {
        /// The provider.
        kind: &'static str,
        /// The key's name.
        name: String,
    },
    /// A key of a length the provider does not take.
    #[error("{kind} key {name:?}: a key of {len} bytes is not valid for {kind}")]
    KeyLength {
        /// The provider.
        kind: &'static str,
        /// The key's name.
        name: String,
        /// The secret's length in bytes.
        len: usize,
    },
    /// A key the cipher refuses.
    #[error("{kind} key {name:?}: unusable")]
    Unusable {
        /// The provider.
        kind: &'static str,
        /// The key's name.
        name: String,
    },
}

#[derive(Debug, Deserialize)]
struct ConfigDoc {
    #[serde(default)]
    kind: String,
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    resources: Vec<ResourceDoc>,
}

#[derive(Debug, Deserialize)]
struct ResourceDoc {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderDoc>,
}

#[derive(Debug, Deserialize)]
struct ProviderDoc {
    aescbc: Option<KeysDoc>,
    aesgcm: Option<KeysDoc>,
    identity: Option<serde_json::Value>,
    secretbox: Option<KeysDoc>,
    kms: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct KeysDoc {
    #[serde(default)]
    keys: Vec<KeyDoc>,
}

#[derive(Debug, Deserialize)]
struct KeyDoc {
    name: String,
    secret: String,
}

#[derive(Clone)]
enum Cipher {
    Cbc(Vec<u8>),
    Gcm(Arc<ring::aead::LessSafeKey>),
}

/// One key of one provider, or `identity`.
#[derive(Clone)]
enum Provider {
    Identity,
    Keyed {
        /// `k8s:enc:<type>:v1:<name>:`.
        prefix: String,
        cipher: Cipher,
    },
}

/// The providers of the resources a rule lists.
#[derive(Clone)]
struct Rule {
    resources: Vec<String>,
    providers: Vec<Provider>,
}

/// Encryption at rest for the resources an EncryptionConfiguration lists.
#[derive(Clone, Default)]
pub struct Encryption {
    rules: Vec<Rule>,
}

impl std::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Encryption({} rules)", self.rules.len())
    }
}

const ENCRYPTED: &str = "k8s:enc:";
const IV_LEN: usize = 16;
const NONCE_LEN: usize = 12;

fn provider_keys(kind: &'static str, keys: &KeysDoc) -> Result<Vec<Provider>, ConfigError> {
    if keys.keys.is_empty() {
        return Err(ConfigError::NoKeys(kind));
    }
    keys.keys
        .iter()
        .map(|k| {
            let secret = base64::engine::general_purpose::STANDARD
                .decode(k.secret.trim())
                .map_err(|source| ConfigError::NotBase64 {
                    kind,
                    name: k.name.clone(),
                    source,
                })?;
            if k.name.is_empty() || k.name.contains(':') {
                return Err(ConfigError::KeyName {
                    kind,
                    name: k.name.clone(),
                });
            }
            let cipher = match (kind, secret.len()) {
                ("aescbc", 16 | 24 | 32) => Cipher::Cbc(secret),
                ("aesgcm", 16 | 32) => {
                    let algorithm = if secret.len() == 16 {
                        &ring::aead::AES_128_GCM
                    } else {
                        &ring::aead::AES_256_GCM
                    };
                    let key = ring::aead::UnboundKey::new(algorithm, &secret).map_err(|_| {
                        ConfigError::Unusable {
                            kind,
                            name: k.name.clone(),
                        }
                    })?;
                    Cipher::Gcm(Arc::new(ring::aead::LessSafeKey::new(key)))
                }
                (_, len) => {
                    return Err(ConfigError::KeyLength {
                        kind,
                        name: k.name.clone(),
                        len,
                    });
                }
            };
            Ok(Provider::Keyed {
                prefix: format!("{ENCRYPTED}{kind}:v1:{}:", k.name),
                cipher,
            })
        })
        .collect()
}

impl Encryption {
    /// Reads an EncryptionConfiguration file.
    ///
    /// # Errors
    /// [`EncryptionConfigError`] when it cannot be read or is invalid.
    pub fn read(path: &std::path::Path) -> Result<Encryption, EncryptionConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| EncryptionConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Encryption::parse(&text).map_err(|why| EncryptionConfigError::Invalid {
            path: path.display().to_string(),
            why,
        })
    }

    /// Parses an EncryptionConfiguration.
    ///
    /// # Errors
    /// Why the text is not a usable configuration.
    pub fn parse(text: &str) -> Result<Encryption, ConfigError> {
        let doc: ConfigDoc =
            serde_saphyr::from_str(text).map_err(|e| ConfigError::Yaml(Box::new(e)))?;
        if doc.kind != "EncryptionConfiguration" || doc.api_version != "apiserver.config.k8s.io/v1"
        {
            return Err(ConfigError::NotConfiguration);
        }
        let mut rules = Vec::new();
        for r in doc.resources {
            let mut providers = Vec::new();
            for p in &r.providers {
                match p {
                    ProviderDoc {
                        aescbc: Some(k), ..
                    } => providers.extend(provider_keys("aescbc", k)?),
                    ProviderDoc {
                        aesgcm: Some(k), ..
                    } => providers.extend(provider_keys("aesgcm", k)?),
                    ProviderDoc {
                        identity: Some(_), ..
                    } => providers.push(Provider::Identity),
                    ProviderDoc {
                        secretbox: Some(_), ..
                    } => return Err(ConfigError::Unsupported("secretbox")),
                    ProviderDoc { kms: Some(_), .. } => {
                        return Err(ConfigError::Unsupported("kms"));
                    }
                    _ => return Err(ConfigError::NoProvider),
                }
            }
            if r.resources.is_empty() || providers.is_empty() {
                return Err(ConfigError::EmptyEntry);
            }
            rules.push(Rule {
                resources: r.resources,
                providers,
            });
        }
        Ok(Encryption { rules })
    }

    /// The providers for a storage key (`/<group or core>/<plural>/...`).
    fn providers(&self, key: &str) -> Option<&[Provider]> {
        if self.rules.is_empty() {
            return None;
        }
        let mut parts = key.trim_start_matches('/').split('/');
        let (group, plural) = (parts.next()?, parts.next()?);
        let group = if group == "core" { "" } else { group };
        let resource = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        self.rules
            .iter()
            .find(|r| {
                r.resources.iter().any(|pattern| {
                    *pattern == resource
                        || pattern == "*.*"
                        || pattern
                            .strip_prefix("*.")
                            .is_some_and(|g| g == group || (g.is_empty() && group.is_empty()))
                })
            })
            .map(|r| r.providers.as_slice())
    }

    /// Whether values of `key` are encrypted when written.
    pub fn encrypts(&self, key: &str) -> bool {
        matches!(
            self.providers(key).and_then(<[_]>::first),
            Some(Provider::Keyed { .. })
        )
    }

    /// The stored form of `plain`, the value of `key`.
    ///
    /// # Errors
    /// When encryption fails (never stores plain text instead).
    pub fn encrypt(&self, key: &str, plain: Vec<u8>) -> Result<Vec<u8>, String> {
        let Some(Provider::Keyed { prefix, cipher }) = self.providers(key).and_then(<[_]>::first)
        else {
            return Ok(plain);
        };
        let mut out = prefix.as_bytes().to_vec();
        match cipher {
            Cipher::Cbc(secret) => {
                let iv: [u8; IV_LEN] = rand::random();
                out.extend_from_slice(&iv);
                out.extend(cbc_encrypt(secret, &iv, &plain)?);
            }
            Cipher::Gcm(sealing) => {
                let nonce: [u8; NONCE_LEN] = rand::random();
                let mut sealed = plain;
                let aad = ring::aead::Aad::from(key.as_bytes());
                let nonce_value = ring::aead::Nonce::assume_unique_for_key(nonce);
                sealing
                    .seal_in_place_append_tag(nonce_value, aad, &mut sealed)
                    .map_err(|_| "sealing failed".to_string())?;
                out.extend_from_slice(&nonce);
                out.extend(sealed);
            }
        }
        Ok(out)
    }

    /// The plain value of a stored `value` of `key`.
    ///
    /// # Errors
    /// Why it cannot be read: no provider's prefix matches, or decryption
    /// failed.
    pub fn decrypt<'a>(
        &self,
        key: &str,
        value: &'a [u8],
    ) -> Result<std::borrow::Cow<'a, [u8]>, String> {
        let Some(providers) = self.providers(key) else {
            return Ok(value.into());
        };
        if !value.starts_with(ENCRYPTED.as_bytes()) {
            return if providers.iter().any(|p| matches!(p, Provider::Identity)) {
                Ok(value.into())
            } else {
                Err("no matching prefix found".into())
            };
        }
        for p in providers {
            let Provider::Keyed { prefix, cipher } = p else {
                continue;
            };
            let Some(rest) = value.strip_prefix(prefix.as_bytes()) else {
                continue;
            };
            return match cipher {
                Cipher::Cbc(secret) => {
                    if rest.len() < IV_LEN {
                        return Err("the data is too short".into());
                    }
                    let (iv, data) = rest.split_at(IV_LEN);
                    cbc_decrypt(secret, iv, data).map(Into::into)
                }
                Cipher::Gcm(opening) => {
                    if rest.len() < NONCE_LEN {
                        return Err("the data is too short".into());
                    }
                    let (nonce, data) = rest.split_at(NONCE_LEN);
                    let nonce = ring::aead::Nonce::try_assume_unique_for_key(nonce)
                        .map_err(|_| "a bad nonce".to_string())?;
                    let mut data = data.to_vec();
                    let plain = opening
                        .open_in_place(nonce, ring::aead::Aad::from(key.as_bytes()), &mut data)
                        .map_err(|_| "decryption failed".to_string())?;
                    Ok(plain.to_vec().into())
                }
            };
        }
        Err("no matching prefix found".into())
    }
}

fn cbc_encrypt(secret: &[u8], iv: &[u8; IV_LEN], plain: &[u8]) -> Result<Vec<u8>, String> {
    use aes::cipher::{BlockModeEncrypt, KeyIvInit, block_padding::Pkcs7};
    macro_rules! with {
        ($aes:ty) => {
            cbc::Encryptor::<$aes>::new_from_slices(secret, iv)
                .map(|e| e.encrypt_padded_vec::<Pkcs7>(plain))
                .map_err(|_| "a bad key or IV".to_string())
        };
    }
    match secret.len() {
        16 => with!(aes::Aes128),
        24 => with!(aes::Aes192),
        _ => with!(aes::Aes256),
    }
}

fn cbc_decrypt(secret: &[u8], iv: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    use aes::cipher::{BlockModeDecrypt, KeyIvInit, block_padding::Pkcs7};
    macro_rules! with {
        ($aes:ty) => {
            cbc::Decryptor::<$aes>::new_from_slices(secret, iv)
                .map_err(|_| "a bad key or IV".to_string())?
                .decrypt_padded_vec::<Pkcs7>(data)
                .map_err(|_| "decryption failed".to_string())
        };
    }
    match secret.len() {
        16 => with!(aes::Aes128),
        24 => with!(aes::Aes192),
        _ => with!(aes::Aes256),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc: {keys: [{name: new, secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/Pz8/Pz8=}]}
  - aesgcm: {keys: [{name: old, secret: MTIzNDU2Nzg5MDEyMzQ1Ng==}]}
  - identity: {}
- resources: ['*.apps']
  providers:
  - aesgcm: {keys: [{name: k, secret: MTIzNDU2Nzg5MDEyMzQ1Ng==}]}
";

    #[test]
    fn listed_resources_are_encrypted_and_every_provider_reads() {
        let e = Encryption::parse(CONFIG).expect("config");
        let key = "/core/secrets/default/s";
        let sealed = e
            .encrypt(key, b"{\"data\":\"hunter2\"}".to_vec())
            .expect("sealed");
        assert!(sealed.starts_with(b"k8s:enc:aescbc:v1:new:"));
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(
            e.decrypt(key, &sealed).expect("read").as_ref(),
            b"{\"data\":\"hunter2\"}"
        );
        // Plain values (from before encryption) read through identity.
        assert_eq!(e.decrypt(key, b"{}").expect("plain").as_ref(), b"{}");
        // Values of other resources are left alone.
        assert_eq!(
            e.encrypt("/core/configmaps/default/c", b"{}".to_vec())
                .expect("plain"),
            b"{}"
        );
        // *.apps encrypts with aesgcm; the key is authenticated.
        let dep = "/apps/deployments/default/d";
        let sealed = e.encrypt(dep, b"{\"a\":1}".to_vec()).expect("sealed");
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:k:"));
        assert_eq!(
            e.decrypt(dep, &sealed).expect("read").as_ref(),
            b"{\"a\":1}"
        );
        assert!(
            e.decrypt("/apps/deployments/default/other", &sealed)
                .is_err()
        );
        // Without identity, plain text is refused.
        assert_eq!(
            e.decrypt(dep, b"{}").err().as_deref(),
            Some("no matching prefix found")
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        let error = |text: &str| Encryption::parse(text).err().map(|e| e.to_string());
        assert_eq!(
            error("kind: Other\n").as_deref(),
            Some("expected kind EncryptionConfiguration of apiVersion apiserver.config.k8s.io/v1")
        );
        let short = CONFIG.replace("MTIzNDU2Nzg5MDEyMzQ1Ng==", "MTIz");
        assert!(
            error(&short).is_some_and(
                |e| e == "aesgcm key \"old\": a key of 3 bytes is not valid for aesgcm"
            )
        );
        let secretbox = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - secretbox: {keys: [{name: a, secret: MTIzNDU2Nzg5MDEyMzQ1Ng==}]}\n";
        assert_eq!(
            error(secretbox).as_deref(),
            Some("the secretbox provider is not supported; use aescbc or aesgcm")
        );
    }
}
