//! The result model: what a run measured, in one home that the runners
//! produce and the run document, the results database, the reports and the
//! comparison read. Only data and what derives from it; no I/O beyond writing
//! the run document atomically.

mod bound;
mod compare;
pub mod meta;
mod network;
mod point;
mod record;

pub use bound::{Bound, Limit, MACHINE_BUSY, SATURATED, Share};
pub use compare::*;
pub use network::*;
pub use point::*;
pub use record::*;
