//! The emulated media model: a controller with a read cache and a write-back
//! cache in front of N devices (spindles or flash channels) in a stripe, an
//! optional host interface and an optional log device. [`Model::schedule`]
//! answers when an operation completes from the state the earlier operations
//! left (each device's busy-until time, the dirty data still to destage); it
//! never sleeps. [`predict`] gives the same model's steady state analytically.
//!
//! What each part does (docs/media.md has the whole story):
//! * host interface (`bus`): one FIFO server every transfer crosses.
//! * read cache: a read hits with probability `read_cache / region touched`
//!   (the extent of offsets seen so far); a hash of the 4 KiB block decides,
//!   so the same block always hits or always misses (reproducible).
//! * devices: a miss goes to the device(s) its stripe units live on, FIFO
//!   per device; a spindle pays seek and rotation unless the access starts
//!   where that device's last one ended.
//! * read-ahead (`readahead`): a read that continues a sequential read
//!   stream is served from what the stream's earlier reads had the
//!   controller fetch ahead in large device reads (`readahead.rs`).
//! * write-back cache: a write completes at cache speed while the dirty data
//!   fits; the cache drains sequential data at `destage` bytes/s, a random
//!   write costing it every whole `record` it touches (ZFS's records), and
//!   a write that finds it full waits for room.
//! * synchronous writes: with NVRAM as any write; without, on the log device
//!   if there is one, else on the devices. A flush waits for the dirty data
//!   (or writes it to the log device) unless the cache is NVRAM.
//! * counters ([`Medium::counters`]): the work each of these FIFO stations
//!   has done since the reset, read hits and misses, operations by kind,
//!   the dirty data; `busy` keeps a station's work on the clock.

mod busy;
mod params;
mod predict;
mod readahead;
#[cfg(test)]
mod sim_tests;
mod state;

pub use params::{Devices, LogDevice, Params, Readahead};
pub use predict::{Prediction, Workload, predict};

use super::stats::Counters;
use super::{MediaOp, Medium};
use std::sync::Mutex;

/// A medium that follows [`Params`].
#[derive(Debug)]
pub struct Model {
    name: String,
    params: Params,
    state: Mutex<state::State>,
}

impl Model {
    /// A model named `name` (the preset's name) in its initial state: idle
    /// devices, empty caches.
    pub fn new(name: &str, params: Params) -> Model {
        Model {
            name: name.to_string(),
            state: Mutex::new(state::State::new(&params)),
            params,
        }
    }

    /// Its figures.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

impl Medium for Model {
    fn name(&self) -> &str {
        &self.name
    }

    fn schedule(&self, op: &MediaOp, now_ns: u64) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.schedule(&self.params, op, now_ns).max(now_ns)
    }

    fn reset(&self) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = state::State::new(&self.params);
    }

    fn counters(&self, now_ns: u64) -> Option<Counters> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        Some(st.counters(&self.params, now_ns))
    }
}
