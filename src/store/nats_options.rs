//! How to reach NATS (`--store nats://...` and the `--nats-*` flags): parsed and checked in
//! every build, so a binary built without the `nats` feature can still say what it was
//! asked for and why it cannot do it ([`NatsOptions::unavailable`]).
//!
//! Credentials come the way NATS clients usually take them: `user:password@` or `token@` in
//! a server URL, a `.creds` file (JWT and NKey seed), or the `--nats-user`/`--nats-password`
//! and `--nats-token` flags. TLS: a `tls://` URL or `--nats-require-tls` insists on it,
//! `--nats-tls-ca` names the CA that signed the servers' certificates (else the system
//! roots), `--nats-tls-cert`/`--nats-tls-key` give a client certificate for servers that
//! verify clients.

use std::path::PathBuf;

/// Everything needed to connect to NATS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NatsOptions {
    /// Server URLs (`nats://host:port` or `tls://host:port`), any of the cluster's, with
    /// any credentials taken out (they are in `user`/`password`/`token`, never logged).
    pub servers: Vec<String>,
    /// A credentials file (`.creds`: JWT and NKey seed).
    pub creds: Option<PathBuf>,
    /// User name (with `password`).
    pub user: Option<String>,
    /// Password (with `user`).
    pub password: Option<String>,
    /// Authentication token.
    pub token: Option<String>,
    /// TLS settings.
    pub tls: NatsTls,
    /// Replicas of the stream when pathd creates it (3 in a three-node cluster).
    pub replicas: usize,
}

/// TLS towards NATS. Without any of it, TLS is still used when the server asks for it,
/// checked against the system's root certificates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NatsTls {
    /// Refuse a connection that is not TLS (also set by a `tls://` URL).
    pub required: bool,
    /// PEM file of the CA(s) the servers' certificates are checked against.
    pub ca: Option<PathBuf>,
    /// PEM client certificate and key, for servers that verify clients (`verify: true`).
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// The credentials a store URL carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlAuth {
    /// `USER:PASSWORD@`.
    UserPassword(String, String),
    /// `TOKEN@`.
    Token(String),
}

impl NatsOptions {
    /// The message of a binary built without the `nats` feature that was given `url`.
    pub fn unavailable(url: &str) -> String {
        format!(
            "--store {}: this pathd was built without the `nats` feature: cargo build \
             --release --features nats, or use the container image",
            redact(url)
        )
    }

    /// Parses `nats://HOST:PORT[,HOST:PORT...]` (or `tls://...`; later entries may omit the
    /// scheme) into server URLs without credentials, and the credentials the URLs carry
    /// (`user:password@` or `token@`), which must agree across entries.
    pub fn parse(url: &str) -> Result<(Vec<String>, Option<UrlAuth>), String> {
        let (scheme, rest) = url
            .split_once("://")
            .filter(|(s, _)| matches!(*s, "nats" | "tls"))
            .ok_or_else(|| {
                format!(
                    "--store must start with nats:// or tls:// (got {:?})",
                    redact(url)
                )
            })?;
        let mut servers = Vec::new();
        let mut auth: Option<UrlAuth> = None;
        for entry in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (entry_scheme, hostport) = match entry.split_once("://") {
                Some((s, h)) if matches!(s, "nats" | "tls") => (s, h),
                Some(_) => {
                    return Err(format!(
                        "--store entry {:?} must be nats:// or tls://",
                        redact(entry)
                    ));
                }
                None => (scheme, entry),
            };
            let hostport = match hostport.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let a = match userinfo.split_once(':') {
                        Some((u, p)) => {
                            UrlAuth::UserPassword(percent_decode(u)?, percent_decode(p)?)
                        }
                        None => UrlAuth::Token(percent_decode(userinfo)?),
                    };
                    if auth.as_ref().is_some_and(|old| *old != a) {
                        return Err("--store entries carry different credentials".into());
                    }
                    auth = Some(a);
                    host
                }
                None => hostport,
            };
            if hostport.is_empty() || hostport.contains(['/', '?', '#']) {
                return Err(format!(
                    "--store entry {:?} is not HOST:PORT",
                    redact(entry)
                ));
            }
            servers.push(format!("{entry_scheme}://{hostport}"));
        }
        if servers.is_empty() {
            return Err("--store names no NATS server".into());
        }
        Ok((servers, auth))
    }

    /// The options for `--store url` and the other flags; credentials in the URL and in
    /// flags are an error together (which one would win is not obvious), as is half of a
    /// user/password pair or of a client certificate.
    #[allow(clippy::too_many_arguments)]
    pub fn from_flags(
        url: &str,
        creds: Option<PathBuf>,
        user: Option<String>,
        password: Option<String>,
        token: Option<String>,
        tls: NatsTls,
        replicas: usize,
    ) -> Result<Self, String> {
        let (servers, url_auth) = Self::parse(url)?;
        let mut o = NatsOptions {
            tls: NatsTls {
                required: tls.required || servers.iter().any(|s| s.starts_with("tls://")),
                ..tls
            },
            servers,
            creds,
            user,
            password,
            token,
            replicas,
        };
        if o.user.is_some() != o.password.is_some() {
            return Err("--nats-user and --nats-password go together".into());
        }
        if let Some(auth) = url_auth {
            if o.user.is_some() || o.token.is_some() {
                return Err(
                    "credentials both in --store and in --nats-user/--nats-token: give them once"
                        .into(),
                );
            }
            match auth {
                UrlAuth::UserPassword(u, p) => {
                    o.user = Some(u);
                    o.password = Some(p);
                }
                UrlAuth::Token(t) => o.token = Some(t),
            }
        }
        Ok(o)
    }
}

/// `url` with the credentials of each entry replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    url.split(',')
        .map(|entry| match entry.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once("://") {
                Some((scheme, _)) => format!("{scheme}://***@{host}"),
                None => format!("***@{host}"),
            },
            None => entry.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Decodes `%XX` escapes (a password may hold `@`, `:` or `,` written so).
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("--store credentials hold a bad %-escape")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "--store credentials are not UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(url: &str) -> Result<NatsOptions, String> {
        NatsOptions::from_flags(url, None, None, None, None, NatsTls::default(), 1)
    }

    #[test]
    fn store_urls_parse() {
        let o = opts("nats://a:1,b:2").unwrap();
        assert_eq!(o.servers, vec!["nats://a:1", "nats://b:2"]);
        assert!(!o.tls.required);
        assert!(opts("http://a").is_err());
        assert!(opts("nats://").is_err());
        assert!(opts("nats://a:1/path").is_err());
    }

    #[test]
    fn credentials_come_out_of_the_url() {
        let o = opts("nats://bob:s%40cret@a:1,b:2").unwrap();
        assert_eq!(o.servers, vec!["nats://a:1", "nats://b:2"]);
        assert_eq!(o.user.as_deref(), Some("bob"));
        assert_eq!(o.password.as_deref(), Some("s@cret"));
        let o = opts("nats://tok@a:1").unwrap();
        assert_eq!(o.token.as_deref(), Some("tok"));
        assert_eq!(o.user, None);
        assert!(opts("nats://x:y@a:1,nats://x:z@b:2").is_err());
        let both = NatsOptions::from_flags(
            "nats://x:y@a:1",
            None,
            Some("u".into()),
            Some("p".into()),
            None,
            NatsTls::default(),
            1,
        );
        assert!(both.is_err());
        let half = NatsOptions::from_flags(
            "nats://a:1",
            None,
            Some("u".into()),
            None,
            None,
            NatsTls::default(),
            1,
        );
        assert!(half.is_err());
    }

    #[test]
    fn tls_urls_require_tls() {
        let o = opts("tls://a:1,b:2").unwrap();
        assert_eq!(o.servers, vec!["tls://a:1", "tls://b:2"]);
        assert!(o.tls.required);
    }

    #[test]
    fn messages_never_show_credentials() {
        assert_eq!(
            redact("nats://bob:pw@a:1,tok@b:2"),
            "nats://***@a:1,***@b:2"
        );
        let m = NatsOptions::unavailable("nats://bob:pw@a:1");
        assert!(m.contains("built without the `nats` feature"), "{m}");
        assert!(m.contains("--features nats"), "{m}");
        assert!(!m.contains("pw"), "{m}");
        assert!(opts("http://bob:pw@a").unwrap_err().contains("***"));
    }
}
