//! HTTPS for a fake that must be reached under a real host name (discord.com): a
//! certificate authority made for the test run, a certificate for the host signed by it,
//! and an axum listener that speaks TLS with it. The client trusts the authority through
//! its PEM file and resolves the host to the listener.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::server::TlsStream;

/// A handshake that does not finish in this long is dropped, so one stuck client cannot
/// hold up the listener's other connections.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

/// Listens on 127.0.0.1 for `host`'s HTTPS; the authority's PEM is written to
/// `ca_file` in `dir`.
pub async fn listen(host: &str, dir: &Path) -> (TlsListener, PathBuf) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let host_key = KeyPair::generate().unwrap();
    let host_cert = CertificateParams::new(vec![host.to_owned()])
        .unwrap()
        .signed_by(&host_key, &ca, &ca_key)
        .unwrap();
    let ca_file = dir.join("fake-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(host_key.serialize_der()));
    let chain = vec![CertificateDer::from(host_cert.der().to_vec())];
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    (TlsListener { tcp, acceptor }, ca_file)
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            let handshake = self.acceptor.accept(stream);
            if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_LIMIT, handshake).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
