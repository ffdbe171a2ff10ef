//! The engine's clock: [`std::time::Instant`] everywhere but on `wasm32-unknown-unknown`,
//! where the standard library has no clock (`Instant::now` panics there). That target gets
//! a stopped clock instead: every instant is the same, so `elapsed` is zero and a deadline
//! in the past stops a search at its first check. A page runs the engine there (see the
//! `wasm/` crate) and times its searches itself.

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use std::time::Instant;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use stopped::Instant;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod stopped {
    use std::time::Duration;

    /// An instant of the stopped clock: all are equal.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct Instant;

    impl Instant {
        /// The (only) instant.
        pub fn now() -> Self {
            Instant
        }

        /// Always zero.
        pub fn elapsed(&self) -> Duration {
            Duration::ZERO
        }
    }

    impl std::ops::Add<Duration> for Instant {
        type Output = Instant;
        fn add(self, _: Duration) -> Instant {
            Instant
        }
    }
}
