//! The command line and configuration: every `pathd serve` flag reaches its field by flag
//! and by environment variable, in that order of precedence over the defaults; bad values
//! and bad combinations are refused with a message naming the flag; the commands parse; the
//! README's configuration table names the same flags, variables and defaults.

use std::collections::HashMap;
use std::ffi::OsString;

use pathd::Config;
use pathd::LogFormat;
use pathd::cli::{Command, parse};
use pathd::config::{FLAGS, Set};

use crate::common::repo_file;

/// Parses `args` with the environment `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Result<Command, String> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    parse(args.iter().map(OsString::from), &|name| {
        env.get(name).cloned()
    })
}

/// The configuration `pathd serve ARGS` with `env` runs with.
fn serve(args: &[&str], env: &[(&str, &str)]) -> Config {
    let mut all = vec!["serve"];
    all.extend(args);
    match run(&all, env) {
        Ok(Command::Serve(c)) => *c,
        other => panic!("{args:?} {env:?}: {other:?}"),
    }
}

/// The error of `pathd ARGS` with `env`.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    match run(args, env) {
        Err(e) => e,
        other => panic!("{args:?} {env:?} accepted: {other:?}"),
    }
}

/// A flag's long name, a value other than its default, and how to read its field back (as
/// the same text).
type Probe = (&'static str, &'static str, fn(&Config) -> String);

/// A probe for every flag.
fn probes() -> Vec<Probe> {
    fn s<T: ToString>(v: T) -> String {
        v.to_string()
    }
    fn opt<T: std::fmt::Debug>(v: &Option<T>) -> String {
        match v {
            Some(v) => format!("{v:?}").trim_matches('"').to_owned(),
            None => "unset".into(),
        }
    }
    vec![
        ("addr", "127.0.0.1:9", |c| s(c.addr)),
        ("maps-dir", "/m", |c| s(c.maps_dir.display())),
        ("data-dir", "/d", |c| s(c.data_dir.display())),
        ("admin-token", "adm", |c| opt(&c.admin_token)),
        ("query-token", "qry", |c| opt(&c.query_token)),
        ("pool-threads", "3", |c| s(c.pool_threads)),
        ("queue-depth", "5", |c| s(c.queue_depth)),
        ("log-format", "json", |c| {
            s(if c.log_format == LogFormat::Json {
                "json"
            } else {
                "text"
            })
        }),
        ("max-body-bytes", "1001", |c| s(c.max_body_bytes)),
        ("max-map-cells", "1002", |c| s(c.max_map_cells)),
        ("max-maps", "1003", |c| s(c.max_maps)),
        ("max-pending-writes", "1032", |c| s(c.max_pending_writes)),
        ("max-batch", "1004", |c| s(c.max_batch)),
        ("max-expansions", "1005", |c| s(c.max_expansions)),
        ("max-timeout-ms", "1006", |c| s(c.max_timeout_ms)),
        ("max-debug-cells", "1007", |c| s(c.max_debug_cells)),
        ("max-patch-cells", "1008", |c| s(c.max_patch_cells)),
        ("max-subscriptions-per-map", "1009", |c| {
            s(c.max_subscriptions_per_map)
        }),
        ("max-subscriptions", "1010", |c| s(c.max_subscriptions)),
        ("subscription-ttl-secs", "1011", |c| {
            s(c.subscription_ttl_secs)
        }),
        ("subscription-event-buffer", "1012", |c| {
            s(c.subscription_event_buffer)
        }),
        ("max-flowfields", "1013", |c| s(c.flowfields.max_flowfields)),
        ("max-live-plans", "1027", |c| s(c.max_live_plans)),
        ("max-flowfield-cells", "1014", |c| {
            s(c.flowfields.max_flowfield_cells)
        }),
        ("hpa-min-cells", "1015", |c| s(c.hpa_min_cells)),
        ("hpa-cluster-size", "17", |c| s(c.hpa_cluster_size)),
        ("jps-plus-max-cells", "1016", |c| s(c.jps_plus_max_cells)),
        ("landmark-memory-mb", "1031", |c| s(c.landmark_memory_mb)),
        ("derived-memory-mb", "1033", |c| s(c.derived_memory_mb)),
        ("subgoal-max-cells", "1034", |c| s(c.subgoal_max_cells)),
        ("shutdown-grace-ms", "1017", |c| s(c.shutdown_grace_ms)),
        ("drain-delay-ms", "1035", |c| s(c.drain_delay_ms)),
        ("allow-anonymous-writes", "true", |c| {
            s(c.allow_anonymous_writes)
        }),
        ("test-remote-peers", "true", |c| s(c.test_remote_peers)),
        ("header-timeout-ms", "1018", |c| {
            s(c.connections.header_timeout_ms)
        }),
        ("body-timeout-ms", "1019", |c| {
            s(c.connections.body_timeout_ms)
        }),
        ("idle-timeout-ms", "1020", |c| {
            s(c.connections.idle_timeout_ms)
        }),
        ("max-connections", "1021", |c| {
            s(c.connections.max_connections)
        }),
        ("store", "nats://h:1", |c| opt(&c.replication.store)),
        ("nats-creds", "/c.creds", |c| opt(&c.replication.nats_creds)),
        ("nats-user", "usr", |c| opt(&c.replication.nats_user)),
        ("nats-password", "pw", |c| opt(&c.replication.nats_password)),
        ("nats-token", "tok", |c| opt(&c.replication.nats_token)),
        ("nats-require-tls", "true", |c| {
            s(c.replication.nats_require_tls)
        }),
        ("nats-tls-ca", "/ca.pem", |c| {
            opt(&c.replication.nats_tls_ca)
        }),
        ("nats-replicas", "3", |c| s(c.replication.nats_replicas)),
        ("max-wait-ms", "1022", |c| s(c.replication.max_wait_ms)),
        ("advertise-url", "http://10.0.0.7:8080", |c| {
            opt(&c.replication.advertise_url)
        }),
        ("placement", "2", |c| opt(&c.replication.placement)),
        ("test-store-delay-us", "1023", |c| s(c.test_store_delay_us)),
        ("test-apply-delay-ms", "1024", |c| s(c.test_apply_delay_ms)),
        ("test-feed-window", "1026", |c| s(c.test_feed_window)),
        ("max-subscription-bytes-per-map", "1025", |c| {
            s(c.max_subscription_bytes_per_map)
        }),
        ("max-subscription-bytes", "1026", |c| {
            s(c.max_subscription_bytes)
        }),
    ]
}

#[test]
fn every_flag_reaches_its_field_by_flag_and_by_environment() {
    let defaults = serve(&[], &[]);
    let probes = probes();
    for flag in FLAGS {
        if flag.long == "nats-tls-cert" || flag.long == "nats-tls-key" {
            continue; // the certificate pair: below
        }
        let (_, value, read) = probes
            .iter()
            .find(|p| p.0 == flag.long)
            .unwrap_or_else(|| panic!("--{} has no probe here", flag.long));
        assert_ne!(
            read(&defaults),
            *value,
            "--{}: pick another probe",
            flag.long
        );
        let long = format!("--{}", flag.long);
        let by_flag = match flag.set {
            Set::Value(_) => {
                let joined = serve(&[&format!("{long}={value}")], &[]);
                assert_eq!(read(&joined), *value, "{long}=");
                serve(&[&long, value], &[])
            }
            Set::Switch(_) => serve(&[&long], &[]),
        };
        assert_eq!(read(&by_flag), *value, "{long}");
        let by_env = serve(&[], &[(flag.env, value)]);
        assert_eq!(read(&by_env), *value, "{}", flag.env);
        // The flag wins over the environment; an empty variable counts as unset.
        if let Set::Value(_) = flag.set {
            let default = read(&defaults);
            let other = serve(&[&long, value], &[(flag.env, "-not-used-")]);
            assert_eq!(read(&other), *value, "{long} over {}", flag.env);
            assert_eq!(
                read(&serve(&[], &[(flag.env, "")])),
                default,
                "{}",
                flag.env
            );
        }
    }
    // Every flag set at once, to values other than the defaults.
    let mut args = Vec::new();
    for (long, value, _) in &probes {
        args.push(format!("--{long}={value}"));
    }
    args.retain(|a| a != "--nats-require-tls=true");
    args.push("--nats-require-tls".into());
    for switch in ["allow-anonymous-writes", "test-remote-peers"] {
        args.retain(|a| *a != format!("--{switch}=true"));
        args.push(format!("--{switch}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let all = serve(&args, &[]);
    for (long, value, read) in &probes {
        assert_eq!(read(&all), *value, "--{long} among all");
    }
}

#[test]
fn defaults_are_the_tables_and_with_dirs_keeps_them() {
    let c = serve(&[], &[]);
    assert_eq!(c.addr.to_string(), "0.0.0.0:8080");
    assert_eq!(c.max_body_bytes, 64 << 20);
    assert_eq!(c.hpa_cluster_size, 32);
    assert_eq!(c.connections.max_connections, 1024);
    assert_eq!(c.replication.nats_replicas, 1);
    assert!(c.admin_token.is_none() && c.replication.store.is_none());
    assert!(!c.replication.nats_require_tls);
    let w = Config::with_dirs("/maps", "/data");
    assert_eq!(w.maps_dir.display().to_string(), "/maps");
    assert_eq!(w.data_dir.display().to_string(), "/data");
    assert_eq!(
        format!(
            "{:?}",
            Config {
                maps_dir: c.maps_dir.clone(),
                data_dir: c.data_dir.clone(),
                ..w
            }
        ),
        format!("{c:?}")
    );
    // A plain `pathd` (no command) is `pathd serve`.
    match run(&["--max-maps", "7"], &[]) {
        Ok(Command::Serve(c)) => assert_eq!(c.max_maps, 7),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_switch_reads_falsey_environment_values_as_off() {
    for off in ["0", "false", "No", "OFF", "n", "f"] {
        let c = serve(&[], &[("PATHD_NATS_REQUIRE_TLS", off)]);
        assert!(!c.replication.nats_require_tls, "{off}");
    }
    for on in ["1", "true", "yes", "on"] {
        let c = serve(&[], &[("PATHD_NATS_REQUIRE_TLS", on)]);
        assert!(c.replication.nats_require_tls, "{on}");
    }
    let e = refused(&["serve", "--nats-require-tls=yes"], &[]);
    assert!(e.contains("nats-require-tls"), "{e}");
}

#[test]
fn bad_values_and_combinations_are_refused_naming_the_flag() {
    for (args, env, says) in [
        (vec!["--addr", "nowhere"], vec![], "--addr"),
        (vec!["--max-maps", "-1"], vec![], "--max-maps"),
        (vec!["--max-maps", "many"], vec![], "--max-maps"),
        (
            vec!["--hpa-cluster-size", "3"],
            vec![],
            "--hpa-cluster-size",
        ),
        (
            vec!["--hpa-cluster-size", "129"],
            vec![],
            "--hpa-cluster-size",
        ),
        (vec!["--nats-replicas", "0"], vec![], "--nats-replicas"),
        (vec!["--nats-replicas", "6"], vec![], "--nats-replicas"),
        (vec!["--max-connections", "0"], vec![], "--max-connections"),
        (vec!["--log-format", "xml"], vec![], "--log-format"),
        (
            vec![],
            vec![("PATHD_QUEUE_DEPTH", "deep")],
            "PATHD_QUEUE_DEPTH",
        ),
        (vec!["--no-such-flag"], vec![], "--no-such-flag"),
        (
            vec!["--max-maps", "1", "--max-maps", "2"],
            vec![],
            "more than once",
        ),
        (vec!["--addr"], vec![], "--addr"),
        (vec!["--nats-tls-cert", "/c.pem"], vec![], "--nats-tls-key"),
        (
            vec![],
            vec![("PATHD_NATS_TLS_KEY", "/k.pem")],
            "--nats-tls-cert",
        ),
        (vec!["stray"], vec![], "stray"),
    ] {
        let mut all = vec!["serve"];
        all.extend(&args);
        let e = refused(&all, &env);
        assert!(e.contains(says), "{args:?} {env:?}: {e}");
    }
    // The command comes first.
    let e = refused(&["--max-maps", "3", "serve"], &[]);
    assert!(e.contains("serve"), "{e}");
    // The certificate pair together is accepted, by flags or variables.
    let c = serve(
        &["--nats-tls-cert", "/c.pem", "--nats-tls-key", "/k.pem"],
        &[],
    );
    assert_eq!(
        c.replication.nats_tls_cert.zip(c.replication.nats_tls_key),
        Some(("/c.pem".into(), "/k.pem".into()))
    );
    let c = serve(
        &[],
        &[
            ("PATHD_NATS_TLS_CERT", "/c.pem"),
            ("PATHD_NATS_TLS_KEY", "/k.pem"),
        ],
    );
    assert!(c.replication.nats_tls_key.is_some());
}

#[test]
fn the_commands_parse() {
    match run(&["scen", "a.map", "a.scen"], &[]) {
        Ok(Command::Scen(a)) => {
            assert_eq!(
                (a.map.to_str(), a.scen.to_str()),
                (Some("a.map"), Some("a.scen"))
            );
            assert_eq!(
                (a.algorithm.as_str(), a.weight, a.json),
                ("astar", 1.0, false)
            );
        }
        other => panic!("{other:?}"),
    }
    match run(
        &[
            "scen",
            "--algorithm",
            "weighted_astar",
            "a.map",
            "--weight=2.5",
            "--json",
            "a.scen",
        ],
        &[],
    ) {
        Ok(Command::Scen(a)) => {
            assert_eq!(
                (a.algorithm.as_str(), a.weight, a.json),
                ("weighted_astar", 2.5, true)
            );
            assert_eq!(a.scen.to_str(), Some("a.scen"));
        }
        other => panic!("{other:?}"),
    }
    assert!(refused(&["scen", "a.map"], &[]).contains("SCEN"));
    assert!(refused(&["scen", "a", "b", "c"], &[]).contains('c'));
    assert!(refused(&["scen", "--weight", "x", "a", "b"], &[]).contains('x'));

    let env = [("PATHD_DATA_DIR", "/from-env")];
    for (args, env, dir) in [
        (vec!["data", "check"], &[][..], "./data"),
        (vec!["data", "check"], &env[..], "/from-env"),
        (vec!["data", "--data-dir", "/d", "check"], &env[..], "/d"),
        (vec!["data", "check", "--data-dir=/d"], &[][..], "/d"),
    ] {
        match run(&args, env) {
            Ok(Command::DataCheck { data_dir }) => assert_eq!(data_dir.to_str(), Some(dir)),
            other => panic!("{args:?}: {other:?}"),
        }
    }
    match run(&["data", "repair", "--map", "m", "--data-dir", "/d"], &[]) {
        Ok(Command::DataRepair { data_dir, map }) => {
            assert_eq!((data_dir.to_str(), map.as_str()), (Some("/d"), "m"));
        }
        other => panic!("{other:?}"),
    }
    assert!(refused(&["data", "repair"], &[]).contains("--map"));
    assert!(refused(&["data"], &[]).contains("check"));
    assert!(refused(&["data", "check", "--map", "m"], &[]).contains("map"));
    assert!(refused(&["data", "fix"], &[]).contains("check"));
    assert!(refused(&["launch"], &[]).contains("launch"));
}

#[test]
fn help_and_version_print_what_each_command_takes() {
    let print = |args: &[&str]| match run(args, &[]) {
        Ok(Command::Print(text)) => text,
        other => panic!("{args:?}: {other:?}"),
    };
    let version = print(&["--version"]);
    assert!(
        version.starts_with(&format!("pathd {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert_eq!(print(&["-V"]), version);
    // Which optional features the build has, and how to get a missing one.
    for (feature, on) in [
        ("nats", cfg!(feature = "nats")),
        ("http2", cfg!(feature = "http2")),
    ] {
        let said = if on {
            format!("with {feature}")
        } else {
            format!("without {feature}: build with --features {feature}")
        };
        assert!(version.contains(&said), "{said:?} missing: {version}");
    }
    for args in [&["--help"][..], &["-h"], &["help"], &["serve", "--help"]] {
        let help = print(args);
        for flag in FLAGS {
            let shown = help.contains(&format!("--{}", flag.long)) && help.contains(flag.env);
            assert_eq!(shown, !flag.hidden, "--{} in {args:?}:\n{help}", flag.long);
            if let (Some(d), false) = (flag.default, flag.hidden) {
                let line = format!("[env: {}] [default: {d}]", flag.env);
                assert!(help.contains(&line), "{line} missing from {args:?}");
            }
        }
    }
    assert!(print(&["--help"]).contains("scen"));
    for args in [&["scen", "--help"][..], &["scen", "a", "-h"]] {
        let help = print(args);
        assert!(
            help.contains("--algorithm") && help.contains("--json"),
            "{help}"
        );
    }
    for args in [&["data", "--help"][..], &["data", "repair", "--help"]] {
        let help = print(args);
        assert!(
            help.contains("repair") && help.contains("PATHD_DATA_DIR"),
            "{help}"
        );
    }
}

/// The README's configuration table: its rows name exactly the visible flags, each with its
/// variable and default.
#[test]
fn the_readme_configuration_table_matches_the_flags() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| flag | environment | default |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        rows.len() > 30,
        "table not found or cut short: {} rows",
        rows.len()
    );
    let names = |cell: &str| -> Vec<String> {
        cell.split(',')
            .map(|s| s.trim().trim_matches('`').to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let mut seen = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let (flags, envs, default) = (names(cells[0]), names(cells[1]), cells[2]);
        if flags.is_empty() {
            assert_eq!(envs, ["RUST_LOG"], "{row}");
            continue;
        }
        assert_eq!(flags.len(), envs.len(), "{row}");
        for (flag, env) in flags.iter().zip(&envs) {
            let long = flag.strip_prefix("--").unwrap_or_else(|| panic!("{row}"));
            let f = pathd::config::find_flag(long).unwrap_or_else(|| panic!("no {flag}: {row}"));
            assert!(!f.hidden, "{row}");
            assert_eq!(&f.env, env, "{row}");
            let shown = default.replace('`', "");
            let ok = match f.default {
                Some(d) => {
                    shown.split_whitespace().next() == Some(d)
                        || shown
                            .strip_suffix(" MiB")
                            .and_then(|m| m.parse::<u64>().ok())
                            .is_some_and(|m| (m << 20).to_string() == d)
                }
                None => ["unset", "off", "system roots"]
                    .iter()
                    .any(|w| shown.starts_with(w)),
            };
            assert!(
                ok,
                "README default {default:?} of {flag}, the flag's is {:?}",
                f.default
            );
            seen.push(long.to_owned());
        }
    }
    for flag in FLAGS.iter().filter(|f| !f.hidden) {
        assert!(
            seen.contains(&flag.long.to_owned()),
            "--{} not in the README",
            flag.long
        );
    }
}
