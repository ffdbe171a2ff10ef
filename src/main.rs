//! The `pathd` binary: `pathd [serve]` runs the server, `pathd scen` checks a scenario file,
//! `pathd data check|repair` inspects the data directory.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use pathd::cli::{self, Command};
use pathd::config::{Config, LogFormat};
use pathd::scen::{self, ScenArgs};
use pathd::state::AppState;
use pathd::store::local;
use tracing_subscriber::filter::Targets;

fn main() -> ExitCode {
    match cli::parse(std::env::args_os().skip(1), &|name| {
        std::env::var(name).ok()
    }) {
        Ok(Command::Serve(config)) => serve_main(*config),
        Ok(Command::Scen(args)) => scen_main(&args),
        Ok(Command::Mapf(args)) => mapf_main(&args),
        Ok(Command::DataCheck { data_dir }) => data_check(&data_dir),
        Ok(Command::DataRepair { data_dir, map }) => data_repair(&data_dir, &map),
        Ok(Command::Print(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pathd: {e}\n\nFor more information, try `pathd --help`.");
            ExitCode::from(2)
        }
    }
}

fn mapf_main(args: &pathd::mapf_cli::MapfArgs) -> ExitCode {
    match pathd::mapf_cli::run(args) {
        Ok(answer) => {
            println!(
                "{}",
                serde_json::to_string(&answer).expect("answer serializes")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pathd mapf: {e}");
            ExitCode::from(2)
        }
    }
}

fn scen_main(args: &ScenArgs) -> ExitCode {
    match scen::run(args) {
        Ok(report) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string(&report).expect("report serializes")
                );
            } else {
                println!("{}", report.line());
            }
            if report.matched == report.rows {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pathd scen: {e}");
            ExitCode::from(2)
        }
    }
}

fn data_check(dir: &Path) -> ExitCode {
    match local::check(dir) {
        Ok((lines, ok)) => {
            for l in lines {
                println!("{l}");
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pathd data check: {}: {e}", dir.display());
            ExitCode::from(2)
        }
    }
}

fn data_repair(dir: &Path, map: &str) -> ExitCode {
    match local::repair(dir, map) {
        Ok(said) => {
            println!("{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pathd data repair: {e}");
            ExitCode::from(2)
        }
    }
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::prelude::*;
    let (filter, bad) = log_filter(std::env::var("RUST_LOG").ok().as_deref());
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        // Colour only for a person at a terminal: a pipe or a file gets plain text, and
        // `NO_COLOR` (any value) turns colour off everywhere.
        LogFormat::Text => registry
            .with(tracing_subscriber::fmt::layer().with_ansi(
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
            ))
            .init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false),
            )
            .init(),
    }
    if let Some(bad) = bad {
        tracing::warn!(RUST_LOG = %bad, "RUST_LOG is not a list of `level` or `target=level` directives; logging at info");
    }
}

/// The log filter from `RUST_LOG`: comma-separated `level` and `target=level` directives
/// (`warn`, `info,pathd::live=debug`). Per-target levels are all pathd needs, so the filter
/// is tracing's `Targets` rather than `EnvFilter`, whose span and field matching would bring
/// a regex engine into every build. An unparsable value falls back to `info` and is returned
/// so it can be reported once logging is up.
fn log_filter(var: Option<&str>) -> (Targets, Option<String>) {
    let info = || Targets::new().with_default(tracing::Level::INFO);
    match var.map(str::trim) {
        None | Some("") => (info(), None),
        Some(spec) => match spec.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(_) => (info(), Some(spec.to_owned())),
        },
    }
}

fn serve_main(config: Config) -> ExitCode {
    init_tracing(config.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let addr = config.addr;
        let state = AppState::new(config)?;
        // A store that refuses its configuration stops us before we listen (`run` checks
        // it too, for embedders; the second check is free).
        state
            .maps()
            .connect_store()
            .await
            .map_err(std::io::Error::other)?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        tracing::info!(addr = %listener.local_addr()?, "pathd listening");
        pathd::run(listener, state, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "pathd failed");
            ExitCode::FAILURE
        }
    }
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::log_filter;
    use tracing::Level;

    #[test]
    fn rust_log_takes_levels_and_targets_and_falls_back_to_info() {
        let (f, bad) = log_filter(None);
        assert!(bad.is_none());
        assert!(f.would_enable("pathd", &Level::INFO));
        assert!(!f.would_enable("pathd", &Level::DEBUG));

        let (f, bad) = log_filter(Some("warn,pathd::live=debug"));
        assert!(bad.is_none());
        assert!(!f.would_enable("pathd::maps", &Level::INFO));
        assert!(f.would_enable("pathd::maps", &Level::WARN));
        assert!(f.would_enable("pathd::live", &Level::DEBUG));

        let (f, bad) = log_filter(Some("pathd=[{x}]"));
        assert_eq!(bad.as_deref(), Some("pathd=[{x}]"));
        assert!(f.would_enable("pathd", &Level::INFO));
    }
}
