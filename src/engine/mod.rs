//! The load engine: the per-thread loop that drives one [`crate::io::Backend`]
//! for many light workers, the per-I/O timeout, and a trace replay's feed.
//!
//! The engine owns the clock and the statistics. A backend only moves bytes:
//! it accepts requests, starts them, and reports which have finished. Every
//! timestamp and every histogram update happens here, so all backends are
//! measured the same way.

pub mod hooks;
pub mod replay;
pub mod timeout;
pub mod worker;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod replay_tests;
