//! The client side of `rediss://` (TLS), for [`wire`](super::wire): the
//! rustls configuration every TLS connection of one server shares.
//!
//! Trust is the system's: the root certificates `rustls-native-certs`
//! finds (the platform's store, or the PEM files `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` name instead), as the `redis` crate's `tls-rustls`
//! client trusts. A certificate store that cannot be read fails the
//! connection rather than trusting less than asked. No client
//! certificate is sent, and a server's certificate is always verified: an
//! address marked `#insecure` is refused when the server is set up (the
//! `redis` crate, built without its `tls-rustls-insecure` feature, refused
//! it too).

use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};

/// The configuration of the tier's TLS connections, with the system's
/// root certificates (see the module documentation).
pub(crate) fn client_config() -> Result<Arc<ClientConfig>, String> {
    let found = rustls_native_certs::load_native_certs();
    if let Some(e) = found.errors.first() {
        return Err(format!("the root certificates could not be read: {e}"));
    }
    let mut roots = RootCertStore::empty();
    for cert in found.certs {
        roots
            .add(cert)
            .map_err(|e| format!("a root certificate is not usable: {e}"))?;
    }
    if roots.is_empty() {
        return Err("no root certificate found to verify the server with".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A client connection to `host` (a name or an address: the certificate
/// must be for it), not yet handshaken.
pub(crate) fn client(config: &Arc<ClientConfig>, host: &str) -> Result<ClientConnection, String> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("`{host}` is not a name a certificate can be for: {e}"))?;
    ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())
}
