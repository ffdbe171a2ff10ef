//! The `pathd` binary: `pathd [serve]` runs the server, `pathd scen` checks a scenario file,
//! `pathd data check|repair` inspects the data directory.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pathd::config::{Config, LogFormat};
use pathd::scen::{self, ScenArgs};
use pathd::state::AppState;
use pathd::store::local;
use tracing_subscriber::EnvFilter;

/// `pathd --version`: the version and whether this build has the replicated store.
#[cfg(feature = "nats")]
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (with nats)");
#[cfg(not(feature = "nats"))]
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (without nats: build with --features nats for --store nats://...)"
);

/// pathd: grid pathfinding over HTTP.
#[derive(Parser)]
#[command(version = VERSION, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `serve` options, for plain `pathd`.
    #[command(flatten)]
    serve: Config,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server (the default).
    Serve(Box<Config>),
    /// Check a Moving AI scenario file against the engine.
    Scen(ScenArgs),
    /// Inspect or repair the data directory (run it while the server is stopped).
    Data(DataArgs),
}

#[derive(clap::Args)]
struct DataArgs {
    #[command(subcommand)]
    action: DataAction,
    /// The data directory.
    #[arg(long, env = "PATHD_DATA_DIR", default_value = "./data", global = true)]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum DataAction {
    /// Report every map: good, torn tail, deleted or damaged (exit 1 if any is damaged).
    /// Changes nothing.
    Check,
    /// Make a damaged map servable by dropping what cannot be read; prints exactly which
    /// acknowledged versions are dropped.
    Repair {
        /// The map to repair.
        #[arg(long)]
        map: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Scen(args)) => scen_main(&args),
        Some(Command::Serve(config)) => serve_main(*config),
        Some(Command::Data(args)) => data_main(&args),
        None => serve_main(cli.serve),
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

fn data_main(args: &DataArgs) -> ExitCode {
    let dir = &args.data_dir;
    match &args.action {
        DataAction::Check => match local::check(dir) {
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
        },
        DataAction::Repair { map } => match local::repair(dir, map) {
            Ok(said) => {
                println!("{said}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pathd data repair: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
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
