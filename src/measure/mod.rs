//! The one measuring loop: jobs × load points × repeats × contenders, run
//! locally or on a fleet, saved after every point.
//!
//! `storlab run` is one contender (its targets), `storlab compare` several in
//! turn with the lab's store restored between tests and the servers' CPU
//! measured around every point, and `storlab study` a scripted set of
//! compares, one per lab the study needs ([`study`]). The command line only
//! parses what the user typed, builds the objects here and turns an
//! [`Outcome`] into an exit code.
//!
//! Contract of the loop ([`Bench::measure`]):
//! * every point's outcome is kept and saved (JSON, CSV, the results
//!   database) before the next point starts, so a failure or an interruption
//!   loses nothing measured;
//! * a failed save ends the run at once with the error naming the file or
//!   the database ([`Error`]), never silently;
//! * the lab's store is restored before a test that follows a write, and
//!   once more at the end; every contender starts on the medium as `lab up`
//!   left it.

mod bench;
pub mod bound;
pub mod lab;
pub mod points;
mod runner;
pub mod session;
pub mod signals;
pub mod study;

pub use bench::Bench;
pub use lab::TemporaryLab;
pub use runner::Runner;
pub use session::{Outputs, Session};

use std::fmt;

/// How a measured command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything ran.
    Ok,
    /// The storage, a server or a host failed (I/O error, no space left,
    /// target lost), while measuring or while preparing; results were saved.
    Failed,
    /// Bad input (an option, job file, target or file the user must change):
    /// nothing ran.
    BadInput,
    /// Interrupted by SIGINT/SIGTERM, whether or not something also failed;
    /// results were saved.
    Interrupted,
}

impl Outcome {
    /// The worse of two outcomes: interrupted, then failed or bad input, then ok.
    pub fn worst(self, other: Outcome) -> Outcome {
        let rank = |c: Outcome| match c {
            Outcome::Ok => 0,
            Outcome::BadInput | Outcome::Failed => 1,
            Outcome::Interrupted => 2,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// A failure of the loop, told as one line naming the thing.
#[derive(Debug)]
pub struct Error {
    /// How the command ends.
    pub outcome: Outcome,
    /// The message.
    pub message: String,
}

impl Error {
    /// Bad input: the user must change the command.
    pub fn input(message: impl Into<String>) -> Self {
        Error {
            outcome: Outcome::BadInput,
            message: message.into(),
        }
    }
    /// A failure while running.
    pub fn failed(message: impl Into<String>) -> Self {
        Error {
            outcome: Outcome::Failed,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The outcome of a failure before a point measured anything: the user's
/// input, or the storage, a server or a host failing.
pub fn run_error_outcome(e: &crate::runner::RunError) -> Outcome {
    use crate::runner::RunError;
    match e {
        RunError::Prepare(_) | RunError::Setup(_) | RunError::Refused(_) => Outcome::BadInput,
        RunError::Storage(_) | RunError::Open(_) | RunError::Host(_) => Outcome::Failed,
        RunError::Stopped(_) => Outcome::Interrupted,
    }
}
