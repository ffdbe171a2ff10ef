//! The `pathd` binary: the scenario checker and the serve flags.

use std::process::Command;

use crate::common::bench;
use serde_json::Value;

fn pathd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pathd"))
}

#[test]
fn scen_reports_every_row_matched_as_json() {
    let out = pathd()
        .arg("scen")
        .arg(bench("maps/arena2.map"))
        .arg(bench("scen/arena2.map.scen"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_u64().unwrap();
    assert!(rows > 500, "{v}");
    assert_eq!(v["matched"].as_u64(), Some(rows));
    for key in ["mean_us", "p50_us", "p99_us", "mean_expanded"] {
        assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {v}");
    }
    assert!(v["p50_us"].as_f64() <= v["p99_us"].as_f64());
}

#[test]
fn scen_text_output_and_unreachable_rows() {
    // den502d has rows stated as unreachable (optimal 0); they match when answered no_path.
    let out = pathd()
        .args(["scen", "--algorithm", "dijkstra"])
        .arg(bench("maps/den502d.map"))
        .arg(bench("scen/den502d.map.scen"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[0], "rows");
    assert_eq!(fields[2], "matched");
    assert_eq!(fields[1], fields[3], "{line}");
    assert!(
        line.contains("p99_us") && line.contains("mean_expanded"),
        "{line}"
    );
}

#[test]
fn scen_fails_on_bad_input() {
    let out = pathd()
        .args(["scen", "/nonexistent.map", "/nonexistent.scen"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = pathd()
        .args(["scen", "--algorithm", "bogus"])
        .arg(bench("maps/arena2.map"))
        .arg(bench("scen/arena2.map.scen"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serve_help_names_the_environment() {
    let out = pathd().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for env in [
        "PATHD_ADDR",
        "PATHD_MAPS_DIR",
        "PATHD_DATA_DIR",
        "PATHD_ADMIN_TOKEN",
        "PATHD_QUERY_TOKEN",
        "PATHD_POOL_THREADS",
        "PATHD_LOG_FORMAT",
    ] {
        assert!(help.contains(env), "{env} missing from --help");
    }
}
