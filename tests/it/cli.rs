//! The `pathd` binary: the scenario checker and the serve flags.

use std::process::Command;

use crate::common::bench;
use serde_json::Value;

fn pathd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pathd"))
}

/// `pathd scen MAP SCEN --json`, which must succeed: its JSON summary.
fn scen_json(map: &std::path::Path, scen: &std::path::Path) -> Value {
    let out = pathd()
        .arg("scen")
        .arg(map)
        .arg(scen)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn scen_reports_every_row_matched_as_json() {
    let v = scen_json(&bench("maps/arena2.map"), &bench("scen/arena2.map.scen"));
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

/// Starts `pathd serve` on port 0 with `--log-format FORMAT` and returns its first log
/// lines, up to and including the one that says it listens; then stops it.
fn startup_log(format: &str) -> Vec<String> {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = pathd()
        .args(["serve", "--addr", "127.0.0.1:0", "--log-format", format])
        .arg("--maps-dir")
        .arg(tmp.path())
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Bounded by the child: it either logs "pathd listening" or exits (EOF).
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.contains("pathd listening");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines.last().is_some_and(|l| l.contains("pathd listening")),
        "{lines:#?}"
    );
    lines
}

#[test]
fn log_formats_are_one_json_object_or_one_text_line_per_event() {
    let json = startup_log("json");
    for line in &json {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["timestamp"].is_string() && v["target"].is_string(), "{v}");
    }
    let listening: Value = serde_json::from_str(json.last().unwrap()).unwrap();
    // Flattened: the message and the fields at the top level.
    assert_eq!(listening["level"], "INFO", "{listening}");
    assert_eq!(listening["message"], "pathd listening", "{listening}");
    assert!(
        listening["addr"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{listening}"
    );

    let text = startup_log("text");
    // Into a pipe (a log collector, a file): no colour sequences.
    for line in &text {
        assert!(
            !line.contains('\x1b'),
            "colour codes in a piped log: {line:?}"
        );
    }
    let listening = text.last().unwrap();
    assert!(
        serde_json::from_str::<Value>(listening).is_err(),
        "{listening}"
    );
    assert!(
        listening.contains("INFO") && listening.contains("addr=127.0.0.1:"),
        "{listening}"
    );
}

/// A row the reachability check answers (no search runs) is timed as its whole call, not as
/// 0 µs: a mean over such rows would otherwise flatter pathd against a peer that searches.
#[test]
fn scen_times_rows_answered_without_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("split.map");
    let scen = dir.path().join("split.map.scen");
    std::fs::write(&map, "type octile\nheight 1\nwidth 3\nmap\n.@.\n").unwrap();
    std::fs::write(
        &scen,
        "version 1\n0\tsplit.map\t3\t1\t0\t0\t2\t0\t0\n0\tsplit.map\t3\t1\t2\t0\t0\t0\t0\n",
    )
    .unwrap();
    let v = scen_json(&map, &scen);
    assert_eq!(v["rows"].as_u64(), Some(2), "{v}");
    assert_eq!(v["matched"].as_u64(), Some(2), "{v}");
    for key in ["mean_us", "p50_us", "p99_us", "mean_call_us"] {
        assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {v}");
    }
}
