//! The flags of `pathd serve`, as one table: name, environment variable, default, help text
//! and how the value is stored. The parser ([`crate::cli`]), `--help`, the defaults
//! ([`Config::with_dirs`]) and the README check (`tests/it/cli.rs`) all read this table, so
//! a flag is declared once. The table is kept in four parts by concern (`serve`, `limits`,
//! `connections`, `cluster`), joined at compile time in `--help` order.

use std::fmt::Display;
use std::str::FromStr;

use super::Config;

/// One flag of `pathd serve`.
#[derive(Clone, Copy)]
pub struct Flag {
    /// The long name, without `--`.
    pub long: &'static str,
    /// The environment variable read when the flag is not given.
    pub env: &'static str,
    /// The value used when neither the flag nor the variable is given (`None`: unset).
    pub default: Option<&'static str>,
    /// The `--help` text.
    pub help: &'static str,
    /// Left out of `--help` (test-only flags).
    pub hidden: bool,
    /// How a value is checked and stored.
    pub set: Set,
}

/// How a flag's value reaches the [`Config`].
#[derive(Clone, Copy)]
pub enum Set {
    /// A flag with a value (`--addr 0.0.0.0:80` or `--addr=0.0.0.0:80`).
    Value(fn(&mut Config, &str) -> Result<(), String>),
    /// A switch without a value (`--nats-require-tls`); its variable is false when `0`,
    /// `false`, `no`, `off`, `n` or `f` (any case), true otherwise.
    Switch(fn(&mut Config, bool)),
}

impl Flag {
    /// The placeholder of its value in `--help` (`--addr <ADDR>`), or none for a switch.
    pub fn value_name(&self) -> Option<String> {
        match self.set {
            Set::Value(_) => Some(self.long.to_ascii_uppercase().replace('-', "_")),
            Set::Switch(_) => None,
        }
    }
}

/// Parses a value with its type's `FromStr`, saying what was wrong.
pub(super) fn parse<T: FromStr>(v: &str) -> Result<T, String>
where
    T::Err: Display,
{
    v.trim().parse().map_err(|e: T::Err| e.to_string())
}

/// Parses an integer that must lie in `lo..=hi`.
pub(super) fn in_range<T: FromStr + PartialOrd + Display>(
    v: &str,
    lo: T,
    hi: T,
) -> Result<T, String>
where
    T::Err: Display,
{
    let n: T = parse(v)?;
    if n < lo || n > hi {
        return Err(format!("{n} is not in {lo}..={hi}"));
    }
    Ok(n)
}

/// `Set::Value` storing a parsed value in a field (`val!(max_maps)`,
/// `val!(connections.header_timeout_ms)`); an optional field stores `Some`.
macro_rules! val {
    ($($field:ident).+) => {
        Set::Value(|c: &mut Config, v: &str| {
            c.$($field).+ = parse(v)?;
            Ok(())
        })
    };
    (some $($field:ident).+) => {
        Set::Value(|c: &mut Config, v: &str| {
            c.$($field).+ = Some(parse(v)?);
            Ok(())
        })
    };
}

mod cluster;
mod connections;
mod limits;
mod serve;

/// The parts of the table, in `--help` order.
const PARTS: [&[Flag]; 4] = [
    serve::FLAGS,
    limits::FLAGS,
    connections::FLAGS,
    cluster::FLAGS,
];

/// Every flag of `pathd serve`, in `--help` order.
pub static FLAGS: &[Flag] = &ALL;

static ALL: [Flag; count(&PARTS)] = join(&PARTS);

/// Flags in `parts`.
const fn count(parts: &[&[Flag]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// The flags of `parts`, one after the other (`N` is their [`count`]).
const fn join<const N: usize>(parts: &[&[Flag]]) -> [Flag; N] {
    let mut out = [parts[0][0]; N];
    let mut k = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(k == N, "the flag table's length");
    out
}

/// The flag named `long` (without `--`).
pub fn find(long: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.long == long)
}
