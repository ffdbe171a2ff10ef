//! Parser tests: the real benchmark quirks, and hostile input that must give an error naming
//! the line, never a panic.

use crate::common::{bench_dir, load_map, load_scen};
use pathd_engine::movingai::{parse_map, parse_scen, write_map};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn crlf_street_map_parses() {
    let raw = std::fs::read_to_string(bench_dir().join("maps/Berlin_0_256.map")).unwrap();
    assert!(raw.contains("\r\n"), "fixture should be CRLF");
    let g = parse_map(&raw).unwrap();
    assert_eq!((g.width(), g.height()), (256, 256));
    // Round trip through the writer keeps every cell.
    let again = parse_map(&write_map(&g).unwrap()).unwrap();
    assert_eq!(again.costs(), g.costs());
}

#[test]
fn baldurs_gate_scenarios_parse() {
    let rows = load_scen("AR0011SR.map.scen");
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|r| r.map == "AR0011SR.map" && r.width == 512)
    );
    let g = load_map("AR0011SR.map");
    assert!(
        rows.iter()
            .all(|r| g.is_passable(r.start) && g.is_passable(r.goal))
    );
}

#[test]
fn every_benchmark_file_parses() {
    for dir in ["maps", "scen"] {
        for e in std::fs::read_dir(bench_dir().join(dir)).unwrap() {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let ok = if dir == "maps" {
                parse_map(&text).is_ok()
            } else {
                parse_scen(&text).is_ok()
            };
            assert!(ok, "{path:?} failed to parse");
        }
    }
}

#[test]
fn malformed_maps_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("type octile\nheight 2\nwidth 2\nmap\n..\n.\n", 6, "cells"),
        (
            "type octile\nheight 2\nwidth 2\nmap\n..\n.?\n",
            6,
            "terrain",
        ),
        ("type octile\nheight x\nwidth 2\nmap\n", 2, "number"),
        ("type hex\nheight 1\nwidth 1\nmap\n.\n", 1, "type"),
        ("type octile\nheight 99999\nwidth 2\nmap\n", 2, "range"),
        ("type octile\nheight 1\nwidth 1\nmap\n.\n.\n", 6, "extra"),
        ("bogus\n", 1, "expected"),
    ];
    for (text, line, word) in cases {
        let e = parse_map(text).unwrap_err();
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.to_string().contains(word), "{text:?}: {e}");
    }
    // Truncated bodies and missing headers are errors too.
    assert!(parse_map("type octile\nheight 3\nwidth 3\nmap\n...\n").is_err());
    assert!(parse_map("type octile\nheight 3\nwidth 3\n").is_err());
    assert!(parse_map("").is_err());
    // A header that promises a huge map with no body is rejected before allocating.
    assert!(parse_map("type octile\nheight 8192\nwidth 8192\nmap\n").is_err());
}

#[test]
fn duplicate_header_lines_are_rejected() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "type octile\nheight 5\nheight 1\nwidth 1\nmap\n.\n",
            3,
            "height",
        ),
        (
            "type octile\nheight 1\nwidth 1\nwidth 1\nmap\n.\n",
            4,
            "width",
        ),
        (
            "type octile\nheight 1\ntype cardinal\nwidth 1\nmap\n.\n",
            3,
            "type",
        ),
        ("type octile\nheight 1\nwidth 1\nmap\nmap\n", 5, "map"),
    ];
    for (text, line, word) in cases {
        let e = parse_map(text).unwrap_err();
        assert_eq!(e.line, *line, "{text:?}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains("duplicate") && msg.contains(word),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn malformed_scenarios_name_the_line() {
    let e = parse_scen("version 1\n0 a.map 4 4 1 1 2 2 1.5\n0 a.map 4 4 1 1 2 2\n").unwrap_err();
    assert_eq!(e.line, 3);
    let e = parse_scen("version 1\n0 a.map 4 4 1 -1 2 2 1.5\n").unwrap_err();
    assert!(e.to_string().contains("start y"), "{e}");
    assert!(parse_scen("0 a.map 4 4 1 1 2 2 1.5\n").is_err());
    assert!(parse_scen("version 1\n0 a.map 4 4 1 1 2 2 NaN\n").is_err());
}

#[test]
fn garbage_and_truncations_never_panic() {
    let real = std::fs::read(bench_dir().join("maps/arena.map")).unwrap();
    let scen = std::fs::read(bench_dir().join("scen/arena.map.scen")).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    for i in 0..400 {
        let src = if i % 2 == 0 { &real } else { &scen };
        let mut bytes = src[..rng.random_range(0..src.len())].to_vec();
        for _ in 0..rng.random_range(0..8) {
            if !bytes.is_empty() {
                let k = rng.random_range(0..bytes.len());
                bytes[k] = rng.random();
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_map(&text);
        let _ = parse_scen(&text);
    }
    let noise: Vec<u8> = (0..10_000).map(|_| rng.random()).collect();
    assert!(parse_map(&String::from_utf8_lossy(&noise)).is_err());
}
