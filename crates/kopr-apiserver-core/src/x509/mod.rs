//! X.509 as kube's Go code reads and writes it, for the pieces that handle
//! certificates themselves: PEM blocks (`pem`) and DER elements (`der`),
//! subject names (`name`), certificate requests (`request`), certificates
//! (`certificate`), and the cluster CA issuing certificates for
//! CertificateSigningRequests (`authority`). Client certificates are
//! verified by rustls-webpki (`authn::x509`); this module reads what kube
//! reads from them.

pub mod authority;
pub mod certificate;
pub mod der;
pub mod name;
pub mod pem;
pub mod request;
