//! The webhook server's certificate and the CA the API server trusts it by (`caBundle`):
//! either generated at start (a CA and a leaf for the server's hosts, rcgen), or read from a
//! directory in the layout of a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`, optional
//! `ca.crt`, as cert-manager writes them) and read again whenever the files change, so a
//! renewed certificate is served without a restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::handling::errors::Error;

/// Where the webhook server's certificate comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Certificates {
    /// A CA and a certificate generated at start, for `localhost`, the listen address and the
    /// configured hosts (the default).
    #[default]
    Generated,
    /// `tls.crt` and `tls.key` in this directory (a mounted `kubernetes.io/tls` Secret), read
    /// again when they change; the `caBundle` is `ca.crt` when present, else `tls.crt`.
    Directory(PathBuf),
}

/// A certificate ready to serve, with its CA.
struct Keys {
    ca_pem: String,
    key: Arc<CertifiedKey>,
    /// The files as read, to notice a change.
    source: Vec<u8>,
}

fn failed(what: &str, e: &dyn std::fmt::Display) -> Error {
    Error::Config(format!("webhook certificate: {what}: {e}"))
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>, Error> {
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, key, &provider)
        .map(Arc::new)
        .map_err(|e| failed("the key does not fit", &e))
}

/// A certificate for `hosts`, signed by a new CA.
fn generate(hosts: &[String]) -> Result<Keys, Error> {
    let fail = |e: &dyn std::fmt::Display| failed("generating", e);
    let ca_key = rcgen::KeyPair::generate().map_err(|e| fail(&e))?;
    let mut ca_params =
        rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| fail(&e))?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kopr webhook CA");
    let ca = ca_params.self_signed(&ca_key).map_err(|e| fail(&e))?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| fail(&e))?;
    for host in hosts {
        let san = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => rcgen::SanType::IpAddress(ip),
            Err(_) => rcgen::SanType::DnsName(host.clone().try_into().map_err(|e| fail(&e))?),
        };
        params.subject_alt_names.push(san);
    }
    let key = rcgen::KeyPair::generate().map_err(|e| fail(&e))?;
    let cert = params.signed_by(&key, &issuer).map_err(|e| fail(&e))?;
    let private =
        PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).map_err(|e| fail(&e))?;
    Ok(Keys {
        ca_pem: ca.pem(),
        key: certified(vec![cert.der().clone()], private)?,
        source: Vec::new(),
    })
}

/// Reads `tls.crt`, `tls.key` and `ca.crt` (if any) from `dir`.
fn read(dir: &Path) -> Result<Keys, Error> {
    let file = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|e| failed(&path.display().to_string(), &e))
    };
    let cert_pem = file("tls.crt")?;
    let key_pem = file("tls.key")?;
    let ca_pem = match std::fs::read(dir.join("ca.crt")) {
        Ok(ca) if !ca.is_empty() => ca,
        _ => cert_pem.clone(),
    };
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed("tls.crt", &e))?;
    if chain.is_empty() {
        return Err(failed("tls.crt", &"no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| failed("tls.key", &e))?;
    let ca_text = String::from_utf8(ca_pem.clone()).map_err(|e| failed("ca.crt", &e))?;
    let mut source = cert_pem;
    source.extend_from_slice(&key_pem);
    source.extend_from_slice(&ca_pem);
    Ok(Keys {
        ca_pem: ca_text,
        key: certified(chain, key)?,
        source,
    })
}

/// The certificate being served; rustls asks it at each handshake.
#[derive(Debug)]
pub(crate) struct Current {
    key: RwLock<Arc<CertifiedKey>>,
    ca: watch::Sender<String>,
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.key.read().ok().map(|k| k.clone())
    }
}

impl Current {
    /// The CA of the certificate served now, PEM.
    pub fn ca_pem(&self) -> String {
        self.ca.borrow().clone()
    }

    /// Follows the CA as certificates are renewed.
    pub fn ca_changes(&self) -> watch::Receiver<String> {
        self.ca.subscribe()
    }

    fn replace(&self, keys: &Keys) {
        if let Ok(mut key) = self.key.write() {
            *key = keys.key.clone();
        }
        self.ca.send_if_modified(|ca| {
            let changed = *ca != keys.ca_pem;
            if changed {
                ca.clone_from(&keys.ca_pem);
            }
            changed
        });
    }
}

/// Loads the certificate from `source` (for `hosts` when generated); a directory is then read
/// again every `every` until `shutdown`, and a change that parses replaces what is served.
///
/// # Errors
/// A certificate that cannot be generated, or files that are missing or do not parse.
pub(crate) fn load(
    source: &Certificates,
    hosts: &[String],
    every: Duration,
    shutdown: CancellationToken,
) -> Result<Arc<Current>, Error> {
    let keys = match source {
        Certificates::Generated => generate(hosts)?,
        Certificates::Directory(dir) => read(dir)?,
    };
    let current = Arc::new(Current {
        key: RwLock::new(keys.key.clone()),
        ca: watch::Sender::new(keys.ca_pem.clone()),
    });
    if let Certificates::Directory(dir) = source {
        let dir = dir.clone();
        let watching = current.clone();
        tokio::spawn(async move {
            let mut seen = keys.source;
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                match read(&dir) {
                    Ok(keys) if keys.source != seen => {
                        tracing::info!(dir = %dir.display(), "webhook certificate reloaded");
                        watching.replace(&keys);
                        seen = keys.source;
                    }
                    Ok(_) => {}
                    // Mid-rotation (one file written, not the other): the next read settles it.
                    Err(error) => tracing::debug!(%error, "webhook certificate not reloaded"),
                }
            }
        });
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_needs_a_matching_certificate_and_key() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_err_and(|e| e.to_string().contains("tls.crt")));
        let one = generate(&["localhost".into()]).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.path().join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).unwrap();
        let keys = read(dir.path()).unwrap();
        assert_eq!(keys.ca_pem, cert.pem(), "no ca.crt: the certificate itself");
        std::fs::write(dir.path().join("ca.crt"), &one.ca_pem).unwrap();
        assert_eq!(read(dir.path()).unwrap().ca_pem, one.ca_pem);
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("tls.key"), other.serialize_pem()).unwrap();
        assert!(read(dir.path()).is_err_and(|e| e.to_string().contains("does not fit")));
    }
}
