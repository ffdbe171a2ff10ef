//! NATS with TLS and with authorization: a real `nats-server` configured with
//! `tls { ... verify: true }` (certificates made by the `openssl` CLI in a temporary
//! directory), `authorization { user, password }` or `authorization { token }`, and real
//! pathd replicas. Right settings serve writes; wrong ones stop pathd at start with a
//! message saying what to check.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::run_to_exit;
use crate::replicas::{Nats, Replica, nats_server, open_text};

/// The `openssl` CLI, or `None` (then the TLS test says so and passes, except under CI).
fn openssl() -> Option<PathBuf> {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "the openssl CLI is needed to make test certificates"
        );
        eprintln!("SKIPPED: the openssl CLI is not installed");
        return None;
    }
    Some(PathBuf::from("openssl"))
}

fn sh(openssl: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new(openssl)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA
/// (P-256 keys: quick to make), in `dir`: `ca.pem`, `server.pem`/`server.key`,
/// `client.pem`/`client.key`. Plus `other-ca.pem`, a CA that signed nothing.
fn make_certs(openssl: &Path, dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    for ca in ["ca", "other-ca"] {
        let (key, pem, subj) = (
            format!("{ca}.key"),
            format!("{ca}.pem"),
            format!("/CN={ca}"),
        );
        let mut a = vec!["req", "-x509"];
        a.extend(ec);
        a.extend([
            "-keyout",
            &key,
            "-out",
            &pem,
            "-days",
            "2",
            "-subj",
            &subj,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        sh(openssl, dir, &a);
    }
    for (who, ext) in [
        (
            "server",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        let (key, csr, pem, extf) = (
            format!("{who}.key"),
            format!("{who}.csr"),
            format!("{who}.pem"),
            format!("{who}.ext"),
        );
        std::fs::write(dir.join(&extf), ext).unwrap();
        let subj = format!("/CN=pathd-test-{who}");
        let mut a = vec!["req"];
        a.extend(ec);
        a.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
        sh(openssl, dir, &a);
        sh(
            openssl,
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "2",
                "-extfile",
                &extf,
            ],
        );
    }
}

/// Starts a `nats-server -js` with `conf` as its configuration file.
fn nats_with(bin: &Path, dir: &Path, conf: &str) -> Nats {
    let file = dir.join("nats.conf");
    std::fs::write(&file, conf).unwrap();
    Nats::start(
        bin,
        &dir.join("js"),
        vec!["-c".into(), file.display().to_string()],
    )
}

/// A replica that must come up and acknowledge a write.
async fn serves_a_write(r: &Replica) {
    let ready = r.ready().await;
    assert_eq!(ready["store"]["connected"], true, "{ready}");
    assert_eq!(r.put("m", &open_text(8, 8)).await, (true, 1));
    let m = r.pathd.get_map("m", Some(1)).await.unwrap();
    assert_eq!(m.version, 1, "{m:?}");
}

/// A start that must fail at once, saying `what`.
fn refused(store: &str, args: &[&str], what: &[&str]) {
    let mut all = vec!["--store", store];
    all.extend(args);
    let (code, out) = run_to_exit(&all, &[]);
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}: {out}");
    for w in what {
        assert!(out.contains(w), "{w:?} missing from: {out}");
    }
    assert!(!out.contains("s3cret"), "a password was logged: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_ca_and_a_client_certificate_serves_and_without_them_fails_clearly() {
    let Some(bin) = nats_server() else { return };
    let Some(openssl) = openssl() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    make_certs(&openssl, d);
    let p = |f: &str| d.join(f).display().to_string();
    let nats = nats_with(
        &bin,
        d,
        &format!(
            "tls {{\n  cert_file: {:?}\n  key_file: {:?}\n  ca_file: {:?}\n  verify: true\n  timeout: 2\n}}\n",
            p("server.pem"),
            p("server.key"),
            p("ca.pem")
        ),
    );
    let url = nats.url();
    let (ca, cert, key, other) = (
        p("ca.pem"),
        p("client.pem"),
        p("client.key"),
        p("other-ca.pem"),
    );
    let good = [
        "--nats-tls-ca",
        ca.as_str(),
        "--nats-tls-cert",
        cert.as_str(),
        "--nats-tls-key",
        key.as_str(),
    ];
    let mut with_require = good.to_vec();
    with_require.push("--nats-require-tls");
    let r = Replica::start(&url, d, &with_require);
    serves_a_write(&r).await;
    // A `tls://` URL asks for TLS the same way.
    let tls_url = url.replace("nats://", "tls://");
    let r2 = Replica::start(&tls_url, d, &good);
    let ready = r2.ready().await;
    assert_eq!(ready["store"]["connected"], true, "{ready}");

    // The server's certificate is not signed by the CA given (or, without one, by a
    // system root): refused, naming the flag to check.
    let client = [
        "--nats-tls-cert",
        cert.as_str(),
        "--nats-tls-key",
        key.as_str(),
    ];
    refused(&url, &client, &["TLS", "--nats-tls-ca"]);
    let mut wrong_ca = vec!["--nats-tls-ca", other.as_str()];
    wrong_ca.extend(client);
    refused(&url, &wrong_ca, &["TLS", "--nats-tls-ca"]);
    // A CA file that is not there.
    let missing = p("missing.pem");
    refused(
        &url,
        &["--nats-tls-ca", missing.as_str()],
        &["--nats-tls-ca", "missing.pem"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_password_right_serves_wrong_fails_clearly() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let nats = nats_with(
        &bin,
        d,
        "authorization {\n  user: pathd\n  password: \"s3cret\"\n}\n",
    );
    let port = nats.port;
    // In the URL, as NATS clients take it, or as flags.
    let r = Replica::start(&format!("nats://pathd:s3cret@127.0.0.1:{port}"), d, &[]);
    serves_a_write(&r).await;
    let r2 = Replica::start(
        &nats.url(),
        d,
        &["--nats-user", "pathd", "--nats-password", "s3cret"],
    );
    let ready = r2.ready().await;
    assert_eq!(ready["store"]["connected"], true, "{ready}");

    let hint = ["authorization violation", "check the credentials"];
    refused(
        &nats.url(),
        &["--nats-user", "pathd", "--nats-password", "wrong"],
        &hint,
    );
    refused(&format!("nats://pathd:wrong@127.0.0.1:{port}"), &[], &hint);
    refused(&nats.url(), &[], &hint);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_right_serves_wrong_fails_clearly() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let nats = nats_with(&bin, d, "authorization {\n  token: \"s3cret\"\n}\n");
    let port = nats.port;
    let r = Replica::start(&format!("nats://s3cret@127.0.0.1:{port}"), d, &[]);
    serves_a_write(&r).await;
    let r2 = Replica::start(&nats.url(), d, &["--nats-token", "s3cret"]);
    let ready = r2.ready().await;
    assert_eq!(ready["store"]["connected"], true, "{ready}");
    let hint = ["authorization violation", "check the credentials"];
    refused(&nats.url(), &["--nats-token", "wrong"], &hint);
    refused(&format!("nats://wrong@127.0.0.1:{port}"), &[], &hint);
}
