//! The HTTP client every command starts from.

use ureq::Agent;
use ureq::config::ConfigBuilder;
use ureq::tls::{RootCerts, TlsConfig};
use ureq::typestate::AgentScope;

/// An HTTP client configuration that trusts the platform's certificates and names edgerag as
/// its user agent; each use adds its timeouts.
pub fn client() -> ConfigBuilder<AgentScope> {
    let tls = TlsConfig::builder().root_certs(RootCerts::PlatformVerifier).build();
    Agent::config_builder()
        .tls_config(tls)
        .user_agent(concat!("edgerag/", env!("CARGO_PKG_VERSION")))
}
