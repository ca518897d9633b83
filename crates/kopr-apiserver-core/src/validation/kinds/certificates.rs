//! Validation of certificates.k8s.io/v1 CertificateSigningRequests: the
//! request (a signed PKCS#10 PEM block), usages, signer name, expiration,
//! conditions and issued certificate, with the tolerances kube grants to
//! problems already stored. Spec changes on update are reset by the
//! strategy (as kube's are), which also keeps `/status` from touching the
//! approval conditions and `/approval` from touching the certificate.

use super::csr_der::{check_certificate, check_csr};
#[allow(unused_imports)]
use super::*;
use base64::Engine;

const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";
const TRUE_ONLY_TYPES: &[&str] = &["Approved", "Denied", "Failed"];
const ALL_STATUSES: &[&str] = &["False", "True", "Unknown"];

/// CSR names are not checked (`ValidateCertificateRequestName`).
fn any_name(_: &str, _: bool) -> Vec<String> {
    Vec::new()
}

/// The bytes of a base64 `[]byte` field; `None` when absent.
fn bytes_field(o: &Obj, k: &str) -> Option<Vec<u8>> {
    let s = o.get(k)?.as_str()?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .unwrap_or_default(),
    )
}

/// Go's `%#v` of a `[]byte`.
fn bytes_repr(b: Option<&[u8]>) -> Value {
    match b {
        None => go_repr("[]byte(nil)"),
        Some(b) => {
            let parts: Vec<String> = b.iter().map(|x| format!("0x{x:x}")).collect();
            go_repr(format!("[]byte{{{}}}", parts.join(", ")))
        }
    }
}

/// `ValidateSignerName`.
pub(super) fn validate_signer_name(ck: &mut Checker, name: &str, path: &str) {
    if name.is_empty() {
        ck.push(FieldError::required(path, ""));
        return;
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [domain, signer] = segments.as_slice() else {
        ck.push(FieldError::invalid(
            path,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    if domain.len() > names::DNS1123_SUBDOMAIN_MAX_LENGTH {
        ck.push(FieldError::too_long(
            path,
            names::DNS1123_SUBDOMAIN_MAX_LENGTH,
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for lbl in &labels {
        let errs = names::is_dns1123_label(lbl);
        if !errs.is_empty() {
            for e in errs {
                ck.push(FieldError::invalid(
                    path,
                    *domain,
                    format!("validating label {}: {e}", go_quote(lbl)),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        ck.push(FieldError::invalid(
            path,
            *domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for lbl in signer.split('.') {
        let errs = names::is_dns1123_subdomain(lbl);
        if !errs.is_empty() {
            for e in errs {
                ck.push(FieldError::invalid(
                    path,
                    *signer,
                    format!("validating label {}: {e}", go_quote(lbl)),
                ));
            }
            break;
        }
    }
    let max = names::DNS1123_SUBDOMAIN_MAX_LENGTH
        + (names::DNS1123_SUBDOMAIN_MAX_LENGTH + names::DNS1123_LABEL_MAX_LENGTH + 1)
        + 1;
    if name.len() > max {
        ck.push(FieldError::too_long(path, max));
    }
}

/// `(type, status)` of each condition.
fn conditions(o: &Obj) -> Vec<(String, String)> {
    o.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (f("type"), f("status"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What kube tolerates because the stored object already has it.
#[derive(Default)]
struct Tolerated {
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_conditions: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
}

fn has_duplicates<T: Ord>(items: impl IntoIterator<Item = T>) -> bool {
    let mut seen = BTreeSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

fn tolerated(root: &Obj, old: Option<&Obj>) -> Tolerated {
    let Some(o) = old else {
        return Tolerated::default();
    };
    let conds = conditions(o);
    let usages: Vec<&str> = o
        .get("spec")
        .and_then(|s| s.get("usages"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let old_cert = o
        .get("status")
        .and_then(Value::as_object)
        .and_then(|s| bytes_field(s, "certificate"));
    let new_cert = root
        .get("status")
        .and_then(Value::as_object)
        .and_then(|s| bytes_field(s, "certificate"));
    Tolerated {
        both_approved_and_denied: conds.iter().any(|c| c.0 == "Approved")
            && conds.iter().any(|c| c.0 == "Denied"),
        legacy_signer: o
            .get("spec")
            .and_then(|s| s.get("signerName"))
            .and_then(Value::as_str)
            == Some(LEGACY_SIGNER),
        duplicate_conditions: has_duplicates(conds.iter().map(|c| c.0.as_str())),
        empty_condition_type: conds.iter().any(|c| c.0.is_empty()),
        arbitrary_certificate: new_cert.clone().unwrap_or_default()
            == old_cert.clone().unwrap_or_default()
            || check_certificate(&old_cert.unwrap_or_default()).is_err(),
        unknown_usages: usages.iter().any(|u| !USAGES.contains(u)),
        duplicate_usages: has_duplicates(usages.iter()),
    }
}

fn validate_conditions(ck: &mut Checker, root: &Obj, tol: &Tolerated) {
    let p = "status.conditions";
    let (mut approved, mut denied) = (false, false);
    let mut seen = BTreeSet::new();
    for (i, (ty, status)) in conditions(root).iter().enumerate() {
        let ip = index(p, i);
        if !tol.empty_condition_type && ty.is_empty() {
            ck.push(FieldError::required(child(&ip, "type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY_TYPES.contains(&ty.as_str()) {
            &["True"]
        } else {
            ALL_STATUSES
        };
        if status.is_empty() {
            ck.push(FieldError::required(child(&ip, "status"), ""));
        } else if !allowed.contains(&status.as_str()) {
            ck.push(FieldError::not_supported(
                child(&ip, "status"),
                status.as_str(),
                allowed,
            ));
        }
        if !tol.both_approved_and_denied {
            let clash = match ty.as_str() {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                ck.push(FieldError::invalid(
                    child(&ip, "type"),
                    ty.as_str(),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !tol.duplicate_conditions && !seen.insert(ty.clone()) {
            ck.push(FieldError::duplicate(child(&ip, "type"), ty.as_str()));
        }
    }
}

/// CertificateSigningRequest (`ValidateCertificateSigningRequest{Create,
/// Update,StatusUpdate,ApprovalUpdate}`).
pub(crate) fn certificate_signing_request(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    let tol = tolerated(root, old);
    validate_object_meta(ck, root, false, any_name, true);
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let request = bytes_field(spec, "request");
    if let Err(e) = check_csr(request.as_deref().unwrap_or_default()) {
        ck.push(FieldError::invalid(
            "spec.request",
            bytes_repr(request.as_deref()),
            e.to_string(),
        ));
    }
    let usages = ck.str_list(spec, "usages", sp);
    if usages.is_empty() {
        ck.push(FieldError::required("spec.usages", ""));
    }
    if !tol.unknown_usages {
        for (i, u) in usages.iter().enumerate() {
            if !USAGES.contains(u) {
                ck.push(FieldError::not_supported(
                    index("spec.usages", i),
                    *u,
                    USAGES,
                ));
            }
        }
    }
    if !tol.duplicate_usages {
        let mut seen = BTreeSet::new();
        for (i, u) in usages.iter().enumerate() {
            if !seen.insert(*u) {
                ck.push(FieldError::duplicate(index("spec.usages", i), *u));
            }
        }
    }
    let signer = ck.string(spec, "signerName", sp);
    if !tol.legacy_signer && signer == LEGACY_SIGNER {
        ck.push(FieldError::invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        validate_signer_name(ck, signer, "spec.signerName");
    }
    if let Some(e) = ck.i32(spec, "expirationSeconds", sp)
        && e < 600
    {
        ck.push(FieldError::invalid(
            "spec.expirationSeconds",
            e,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    validate_conditions(ck, root, &tol);
    let status = root.get("status").and_then(Value::as_object);
    let cert = status
        .and_then(|s| bytes_field(s, "certificate"))
        .unwrap_or_default();
    if !tol.arbitrary_certificate
        && let Err(e) = check_certificate(&cert)
    {
        ck.push(FieldError::invalid(
            "status.certificate",
            "<certificate data>",
            e.to_string(),
        ));
    }
    let Some(o) = old else { return };
    let (new_conds, old_conds) = (conditions(root), conditions(o));
    for t in TRUE_ONLY_TYPES {
        let count = |c: &[(String, String)]| c.iter().filter(|(ty, _)| ty == t).count();
        if count(&new_conds) < count(&old_conds) {
            ck.push(FieldError::forbidden(
                "status.conditions",
                format!("updates may not remove a condition of type {}", go_quote(t)),
            ));
        }
    }
    let old_cert = o
        .get("status")
        .and_then(Value::as_object)
        .and_then(|s| bytes_field(s, "certificate"))
        .unwrap_or_default();
    // Only `/status` can change the certificate (the strategy keeps it
    // otherwise), and it may not replace one already issued.
    if cert != old_cert && !old_cert.is_empty() {
        ck.push(FieldError::forbidden(
            "status.certificate",
            "updates may not modify existing certificate content",
        ));
    }
}
