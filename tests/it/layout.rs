//! The server's layout, held by a test (issue 22): no import circle among the top-level
//! modules of `src/`, and nothing below the HTTP edge imports it.
//!
//! How it reads the tree: every `.rs` file under `src/` belongs to the top-level module it
//! is in (`src/live/feed.rs` to `live`, `src/state.rs` to `state`; `lib.rs` and `main.rs`,
//! which wire everything together, to none). A module depends on another when its code
//! names `crate::other` (also inside `use crate::{a, b}` groups). Comments are skipped
//! (a doc link is not an import) and so is everything from a file's
//! `#[cfg(test)] mod tests` on (tests may reach anywhere). The strongly connected groups of
//! that graph (Tarjan) are the circles; the test fails on any, and prints each group's
//! edges inside it, and every file below the edge that names `crate::http`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The edge: it may import every other module; none may import it.
const EDGE: &str = "http";

/// Edges not yet cut, each with the reason it is still here. Ignored by the circle check
/// (and an edge to the edge here excuses that module's files from the below-the-edge
/// check); the test fails when one of them is gone, so the list only shrinks. Empty when
/// the tree has no circle.
const NOT_YET_CUT: &[(&str, &str, &str)] = &[];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal (a URL) is rare in this code; the rest of
            // such a line is skipped, which can only hide an edge, never invent one.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names: `crate::x` and each head of `crate::{x, y::z}`.
fn named(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue; // `pathd_crate::`, `$crate::`
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Heads of a `use crate::{...}` group: names after `{` or after a `,` at depth 0.
            let mut depth = 0;
            let mut at_head = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_head = true,
                    c if at_head && (c.is_ascii_alphanumeric() || c == '_') => {
                        out.insert(ident(&group[j..]));
                        at_head = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out
}

/// Names `lib.rs` re-exports at the crate root (`pub use derived::{hpa, jump};` makes
/// `crate::hpa` a path into `derived`), with the module each comes from.
fn root_aliases(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(path) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let path = path.trim_end_matches(';');
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let items = match rest.rsplit_once('{') {
            Some((_, list)) => list.trim_end_matches('}').split(',').collect(),
            None => vec![rest],
        };
        for item in items {
            let name = item.rsplit("::").next().unwrap_or(item).trim();
            if !name.is_empty() {
                out.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    out
}

/// Every top-level module of `src/` with its files.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut mods: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let files = mods.entry(name).or_default();
        if path.is_dir() {
            rs_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    mods.retain(|_, files| !files.is_empty());
    mods
}

/// Strongly connected groups of more than one module (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        groups: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.edges[v] {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    group.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.groups
}

#[test]
fn no_import_circle_and_http_stays_at_the_edge() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    assert!(mods.contains_key(EDGE), "no src/{EDGE}/");
    let aliases = root_aliases(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let excused = |m: &str| NOT_YET_CUT.iter().any(|(a, b, _)| *a == m && *b == EDGE);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut below_edge = Vec::new();
    for (m, files) in &mods {
        let out = edges.entry(m.clone()).or_default();
        for f in files {
            let names: BTreeSet<String> = named(&code(&std::fs::read_to_string(f).unwrap()))
                .into_iter()
                .map(|n| match aliases.get(&n) {
                    Some(module) if !mods.contains_key(&n) => module.clone(),
                    _ => n,
                })
                .collect();
            if m != EDGE && names.contains(EDGE) && !excused(m) {
                below_edge.push(f.strip_prefix(&src).unwrap().display().to_string());
            }
            out.extend(names.into_iter().filter(|d| d != m && mods.contains_key(d)));
        }
    }
    let mut gone = Vec::new();
    for (from, to, _why) in NOT_YET_CUT {
        if !edges.get_mut(*from).is_some_and(|s| s.remove(*to)) {
            gone.push(format!("{from} -> {to}"));
        }
    }
    let groups = circles(&edges);
    let mut report = String::new();
    for g in &groups {
        report += &format!("circle: {}\n", g.join(", "));
        for a in g {
            let inside: Vec<_> = edges[a].iter().filter(|b| g.contains(b)).collect();
            report += &format!("  {a} -> {inside:?}\n");
        }
    }
    for f in &below_edge {
        report += &format!("below the edge but names crate::{EDGE}: src/{f}\n");
    }
    for e in &gone {
        report += &format!("{e} is cut: take it off NOT_YET_CUT\n");
    }
    assert!(report.is_empty(), "the layout of src/:\n{report}");
}

#[test]
fn the_reader_finds_grouped_and_plain_paths() {
    let text = "use crate::a::B;\nuse crate::{b, c::{D, E}, d};\n// crate::e\nlet x = $crate::f;\n\
                #[cfg(test)]\nmod tests { use crate::g; }";
    let got = named(&code(text));
    let want: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    assert_eq!(got, want);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        edges.entry(a.into()).or_default().insert(b.into());
        edges.entry(b.into()).or_default();
    }
    assert_eq!(circles(&edges), vec![vec!["x", "y", "z"]]);
    let aliases = root_aliases("pub use derived::{hpa, jump};\npub use http::error::ApiError;\n");
    assert_eq!(aliases["hpa"], "derived");
    assert_eq!(aliases["ApiError"], "http");
}
