//! The command line: `pathd [serve] [FLAGS]`, `pathd scen`, `pathd data check|repair`.
//!
//! Read with `lexopt` (a small lexer of arguments) against the flag table in
//! [`crate::config`], rather than a derive-based parser: that one was a fifth of a cold
//! release build. The help texts are written here; the serve flags' part is generated from
//! the table, so a flag cannot be missing from `--help`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;

use lexopt::Arg::{Long, Short, Value};
use lexopt::{Parser, ValueExt};

use crate::config::{Config, FLAGS, Set, find_flag};
use crate::scen::ScenArgs;

/// `pathd --version`: the version and which optional Cargo features this build has (the
/// replicated store, HTTP/2), each missing one with how to get it.
pub fn version() -> String {
    let nats = if cfg!(feature = "nats") {
        "with nats"
    } else {
        "without nats: build with --features nats for --store nats://..."
    };
    let http2 = if cfg!(feature = "http2") {
        "with http2"
    } else {
        "without http2: build with --features http2 for HTTP/2 (h2c, prior knowledge)"
    };
    format!("{} ({nats}; {http2})", env!("CARGO_PKG_VERSION"))
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Run the HTTP server (`pathd` or `pathd serve`).
    Serve(Box<Config>),
    /// Check a Moving AI scenario file (`pathd scen`).
    Scen(ScenArgs),
    /// Plan a MAPF scenario's first agents (`pathd mapf`).
    Mapf(Box<crate::mapf_cli::MapfArgs>),
    /// Report every map of the data directory (`pathd data check`).
    DataCheck {
        /// The data directory.
        data_dir: PathBuf,
    },
    /// Make a damaged map servable (`pathd data repair --map NAME`).
    DataRepair {
        /// The data directory.
        data_dir: PathBuf,
        /// The map to repair.
        map: String,
    },
    /// Print this to standard output and exit successfully (`--help`, `--version`).
    Print(String),
}

/// Reads the arguments (without the program name), taking flags not given from `env`.
/// The error is a one-line message for standard error (exit status 2).
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Command, String> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    // A command comes first; anything else is `serve`'s flags (so `pathd --addr X serve`
    // is an error, as the command must come first).
    let command = match args.first().and_then(|a| a.to_str()) {
        Some(c @ ("serve" | "scen" | "mapf" | "data" | "help")) => {
            let c = c.to_owned();
            args.remove(0);
            c
        }
        _ => String::new(),
    };
    let mut p = Parser::from_args(args);
    let r = match command.as_str() {
        "serve" => serve(&mut p, env, false),
        "scen" => scen(&mut p),
        "mapf" => crate::mapf_cli::parse(&mut p)
            .map(|a| match a {
                Some(a) => Command::Mapf(Box::new(a)),
                None => Command::Print(crate::mapf_cli::HELP.into()),
            })
            .map_err(Error),
        "data" => data(&mut p, env),
        "help" => Ok(Command::Print(top_help())),
        _ => serve(&mut p, env, true),
    };
    r.map_err(|e| e.to_string())
}

/// An error of the command line: lexopt's, or one of ours.
#[derive(Debug)]
struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<lexopt::Error> for Error {
    fn from(e: lexopt::Error) -> Self {
        Error(e.to_string())
    }
}

impl From<String> for Error {
    fn from(e: String) -> Self {
        Error(e)
    }
}

/// `serve`'s flags; `top` when no command was named (then `--help` shows the commands too,
/// and `--version` works).
fn serve(
    p: &mut Parser,
    env: &dyn Fn(&str) -> Option<String>,
    top: bool,
) -> Result<Command, Error> {
    let mut given: HashMap<&'static str, Option<String>> = HashMap::new();
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                return Ok(Command::Print(if top { top_help() } else { serve_help() }));
            }
            Short('V') | Long("version") if top => {
                return Ok(Command::Print(format!("pathd {}\n", version())));
            }
            Long(name) => {
                let Some(flag) = find_flag(name) else {
                    return Err(Error(format!(
                        "unknown flag --{name} (see `pathd serve --help`)"
                    )));
                };
                let value = match flag.set {
                    Set::Value(_) => Some(p.value()?.string()?),
                    Set::Switch(_) => None,
                };
                if given.insert(flag.long, value).is_some() {
                    return Err(Error(format!("--{} is given more than once", flag.long)));
                }
            }
            Value(v) if top => {
                return Err(Error(format!(
                    "unknown command {:?} (commands: serve, scen, data; see `pathd --help`)",
                    v.to_string_lossy()
                )));
            }
            other => return Err(other.unexpected().into()),
        }
    }
    Ok(Command::Serve(Box::new(Config::resolve(&given, env)?)))
}

/// `pathd scen [--algorithm NAME] [--weight W] [--landmarks K] [--json] MAP SCEN`.
fn scen(p: &mut Parser) -> Result<Command, Error> {
    let mut files = Vec::new();
    let mut args = ScenArgs {
        map: PathBuf::new(),
        scen: PathBuf::new(),
        algorithm: "astar".into(),
        weight: 1.0,
        landmarks: None,
        json: false,
    };
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Print(SCEN_HELP.into())),
            Long("algorithm") => args.algorithm = p.value()?.string()?,
            Long("weight") => args.weight = p.value()?.parse()?,
            Long("landmarks") => args.landmarks = Some(p.value()?.parse()?),
            Long("json") => args.json = true,
            Value(v) if files.len() < 2 => files.push(PathBuf::from(v)),
            other => return Err(other.unexpected().into()),
        }
    }
    let [map, scen] = <[PathBuf; 2]>::try_from(files)
        .map_err(|_| Error("pathd scen needs MAP and SCEN (see `pathd scen --help`)".into()))?;
    args.map = map;
    args.scen = scen;
    Ok(Command::Scen(args))
}

/// `pathd data [--data-dir DIR] check|repair --map NAME` (`--data-dir` anywhere).
fn data(p: &mut Parser, env: &dyn Fn(&str) -> Option<String>) -> Result<Command, Error> {
    let mut data_dir = None;
    let mut action: Option<String> = None;
    let mut map = None;
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Print(DATA_HELP.into())),
            Long("data-dir") => data_dir = Some(PathBuf::from(p.value()?)),
            Long("map") if action.as_deref() == Some("repair") => {
                map = Some(p.value()?.string()?);
            }
            Value(v) if action.is_none() => action = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let data_dir = data_dir
        .or_else(|| {
            env("PATHD_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(Into::into)
        })
        .unwrap_or_else(|| "./data".into());
    match (action.as_deref(), map) {
        (Some("check"), _) => Ok(Command::DataCheck { data_dir }),
        (Some("repair"), Some(map)) => Ok(Command::DataRepair { data_dir, map }),
        (Some("repair"), None) => Err(Error("pathd data repair needs --map NAME".into())),
        _ => Err(Error(
            "pathd data needs `check` or `repair --map NAME` (see `pathd data --help`)".into(),
        )),
    }
}

const SCEN_HELP: &str = "\
Check a Moving AI scenario file against the engine.

Usage: pathd scen [--algorithm NAME] [--weight W] [--landmarks K] [--json] MAP SCEN

Arguments:
  MAP   The Moving AI `.map` file.
  SCEN  Its `.scen` file.

Options:
      --algorithm <NAME>  Algorithm wire name (astar, dijkstra, weighted_astar, jps,
                          jps_plus, theta, hpa, auto, subgoal; subgoal builds the map's
                          subgoal graph before the rows) [default: astar]
      --weight <W>        Heuristic weight `w` of weighted A* (`f = g + w h`, answers within
                          `w` of optimal); checked like a query's weight, ignored by the
                          other algorithms [default: 1]
      --landmarks <K>     Landmarks for jps_plus and auto (at most 16; 0 for none), measured
                          before the rows like the jump table [default: as many as the
                          server's default --landmark-memory-mb affords: 16, 8 or 4]
      --json              Print one JSON object instead of a text line
  -h, --help              Print help
";

const DATA_HELP: &str = "\
Inspect or repair the data directory (run it while the server is stopped).

Usage: pathd data [--data-dir DIR] check
       pathd data [--data-dir DIR] repair --map NAME

Commands:
  check   Report every map: good, torn tail, deleted or damaged (exit 1 if any is damaged).
          Changes nothing.
  repair  Make a damaged map servable by dropping what cannot be read; prints exactly
          which acknowledged versions are dropped.

Options:
      --data-dir <DIR>  The data directory [env: PATHD_DATA_DIR] [default: ./data]
      --map <NAME>      The map to repair
  -h, --help            Print help
";

/// `pathd --help`: the commands, then `serve`'s flags.
fn top_help() -> String {
    format!(
        "pathd: grid pathfinding over HTTP.\n\n\
         Usage: pathd [serve] [OPTIONS]\n       \
         pathd scen [OPTIONS] MAP SCEN\n       \
         pathd mapf [OPTIONS] -N <N> MAP SCEN\n       \
         pathd data [--data-dir DIR] check|repair --map NAME\n\n\
         Commands:\n  \
         serve  Run the HTTP server (the default)\n  \
         scen   Check a Moving AI scenario file against the engine\n  \
         mapf   Plan a MAPF scenario's first N agents (JSON like POST .../plans)\n  \
         data   Inspect or repair the data directory (run it while the server is stopped)\n  \
         help   Print this help\n\n\
         {}  -V, --version\n          Print version\n",
        flags_help()
    )
}

/// `pathd serve --help`.
fn serve_help() -> String {
    format!(
        "Run the HTTP server (the default).\n\nUsage: pathd serve [OPTIONS]\n\n{}",
        flags_help()
    )
}

/// The options part of the help: every visible flag with its variable, default and text.
fn flags_help() -> String {
    let mut s = String::from(
        "Options (each flag not given is read from its environment variable, else its \
         default):\n",
    );
    for flag in FLAGS.iter().filter(|f| !f.hidden) {
        let _ = match flag.value_name() {
            Some(v) => writeln!(s, "      --{} <{v}>", flag.long),
            None => writeln!(s, "      --{}", flag.long),
        };
        for line in wrap(flag.help, 80) {
            let _ = writeln!(s, "          {line}");
        }
        let _ = match flag.default {
            Some(d) => writeln!(s, "          [env: {}] [default: {d}]", flag.env),
            None => writeln!(s, "          [env: {}]", flag.env),
        };
    }
    s.push_str("  -h, --help\n          Print help\n");
    s
}

/// Splits `text` into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}
