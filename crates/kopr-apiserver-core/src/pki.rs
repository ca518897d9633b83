//! Certificates and credentials: a CA and serving certificate made with
//! rcgen, a random bearer token, and the key that signs service-account
//! tokens, generated at first start and kept in the data directory's `pki`
//! (mode 0700, each file 0600). The CA's key (`ca.key`) is kept too: it
//! signs the certificates of approved CertificateSigningRequests
//! (`controllers::certificates`). A data directory made before it was kept
//! has no `ca.key`; its CSRs are then left unsigned, as
//! kube-controller-manager leaves them without `--cluster-signing-key-file`.

use std::net::IpAddr;
use std::path::Path;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// Errors making or loading credentials.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Certificate generation failed.
    #[error("certificate generation: {0}")]
    Rcgen(#[from] rcgen::Error),
    /// Reading or writing credentials failed.
    #[error("credentials: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's credentials, PEM-encoded.
#[derive(Clone)]
pub struct Credentials {
    /// The CA certificate clients trust.
    pub ca_pem: String,
    /// The CA's private key (PKCS#8 PEM); `None` for a data directory
    /// generated before the key was kept.
    pub ca_key_pem: Option<String>,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving key.
    pub key_pem: String,
    /// The bearer token clients present.
    pub token: String,
    /// The private key (PKCS#8 PEM, P-256) signing service-account tokens.
    pub service_account_key_pem: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Generates fresh credentials valid for `ips` and `localhost`.
pub fn generate(ips: &[IpAddr]) -> Result<Credentials, PkiError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kopr-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "kubernetes.default.svc".to_string(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kopr-apiserver");
    for ip in ips {
        params.subject_alt_names.push(SanType::IpAddress(*ip));
    }
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Credentials {
        ca_pem,
        ca_key_pem: Some(ca_key_pem),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        token: random_token(),
        service_account_key_pem: KeyPair::generate()?.serialize_pem(),
    })
}

/// The signer of service-account tokens for `credentials`' key.
///
/// # Errors
/// When the key is not a P-256 key in PKCS#8 PEM.
pub fn service_account_signer(
    credentials: &Credentials,
) -> Result<crate::authn::jwt::Signer, PkiError> {
    use rcgen::PublicKeyData;
    let key = KeyPair::from_pem(&credentials.service_account_key_pem)?;
    crate::authn::jwt::Signer::from_pkcs8(key.serialized_der(), &key.subject_public_key_info())
        .map_err(|e| PkiError::Io(std::io::Error::other(e.to_string())))
}

fn write_private(path: &Path, contents: &str) -> Result<(), std::io::Error> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()
}

/// Loads credentials from `dir/pki`, generating them at first start.
pub fn load_or_generate(dir: &Path, ips: &[IpAddr]) -> Result<Credentials, PkiError> {
    let pki = dir.join("pki");
    let files = ["ca.crt", "server.crt", "server.key", "token"].map(|f| pki.join(f));
    let sa_key = pki.join("sa.key");
    let ca_key = pki.join("ca.key");
    if files.iter().all(|f| f.exists()) {
        crate::datadir::private_dir(&pki)?;
        let read = |i: usize| std::fs::read_to_string(&files[i]);
        // Data directories from before service-account tokens get a key.
        let service_account_key_pem = if sa_key.exists() {
            std::fs::read_to_string(&sa_key)?
        } else {
            let pem = KeyPair::generate()?.serialize_pem();
            write_private(&sa_key, &pem)?;
            pem
        };
        let ca_key_pem = if ca_key.exists() {
            Some(std::fs::read_to_string(&ca_key)?)
        } else {
            None
        };
        return Ok(Credentials {
            ca_pem: read(0)?,
            ca_key_pem,
            cert_pem: read(1)?,
            key_pem: read(2)?,
            token: read(3)?.trim().to_string(),
            service_account_key_pem,
        });
    }
    std::fs::create_dir_all(&pki)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pki, std::fs::Permissions::from_mode(0o700))?;
    }
    let creds = generate(ips)?;
    write_private(&sa_key, &creds.service_account_key_pem)?;
    if let Some(pem) = &creds.ca_key_pem {
        write_private(&ca_key, pem)?;
    }
    write_private(&files[0], &creds.ca_pem)?;
    write_private(&files[1], &creds.cert_pem)?;
    write_private(&files[2], &creds.key_pem)?;
    write_private(&files[3], &creds.token)?;
    Ok(creds)
}

/// Writes a kubeconfig (context `kopr`) for a server URL.
pub fn write_kubeconfig(
    path: &Path,
    server_url: &str,
    creds: &Credentials,
) -> Result<(), std::io::Error> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let ca = base64::engine::general_purpose::STANDARD.encode(creds.ca_pem.as_bytes());
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kopr\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\nusers:\n- name: kopr\n  user:\n    token: {token}\ncontexts:\n- name: kopr\n  context:\n    cluster: kopr\n    user: kopr\n    namespace: default\ncurrent-context: kopr\npreferences: {{}}\n",
        token = creds.token
    );
    write_private(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_key_is_kept_and_a_directory_from_before_it_has_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_generate(dir.path(), &[]).expect("generated");
        let key = dir.path().join("pki").join("ca.key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key)
                .expect("ca.key")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(first.ca_key_pem.is_some());
        let again = load_or_generate(dir.path(), &[]).expect("loaded");
        assert_eq!(again.ca_key_pem, first.ca_key_pem);
        assert_eq!(again.ca_pem, first.ca_pem);
        std::fs::remove_file(&key).expect("removed");
        let older = load_or_generate(dir.path(), &[]).expect("loaded");
        assert_eq!(older.ca_key_pem, None);
        assert_eq!(older.ca_pem, first.ca_pem);
    }
}
