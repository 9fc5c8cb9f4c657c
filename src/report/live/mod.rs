//! The live page (`--web ADDR` on run, compare and study): one page served
//! while the run measures, showing per second the IOPS, MB/s and latency
//! percentiles of the target being measured and of each host, the current
//! load point, what bound the last point and the errors so far.
//!
//! [`Live`] is both the page's server and an [`Observer`]: the measuring
//! loop tees it beside progress and the database, and tells it each point's
//! end ([`Live::point_done`]). The page (`page.html`, no external script,
//! stylesheet or font) polls `GET /state` once a second and redraws; nothing
//! is pushed, so a slow or closed browser never holds the run back.
//!
//! Bound to a loopback address it serves anyone on this machine; bound
//! elsewhere it needs the fleet's token, as `?token=` on the page's address
//! (the page passes it on) or as `Authorization: Bearer`.

mod server;
mod state;

use crate::model::{IntervalRecord, PointResult};
use crate::runner::Observer;
use crate::workload::Spec;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use server::check_addr;
use state::State;

/// A live page being served; clones share it.
#[derive(Clone)]
pub struct Live {
    state: Arc<Mutex<State>>,
    addr: SocketAddr,
    _server: Arc<server::Server>,
}

impl Live {
    /// Serve the page on `addr` (port 0: any free port) for the run named
    /// `run`; `token` is required of every request when given (and must be
    /// given for an address that is not loopback). The error names the
    /// address: in use, not loopback without a token, not bindable.
    pub fn serve(addr: SocketAddr, token: Option<String>, run: &str) -> Result<Live, String> {
        check_addr(addr, token.is_some())?;
        let state = Arc::new(Mutex::new(State::new(run)));
        let server = server::Server::start(addr, token, Arc::clone(&state))?;
        Ok(Live {
            addr: server.addr(),
            state,
            _server: Arc::new(server),
        })
    }

    /// Where the page is served (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        // A panic elsewhere while holding the lock leaves figures that are
        // still worth showing: take them.
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s);
    }

    /// The job and target the next points measure.
    pub fn set_job(&self, job: &str, target: &str) {
        self.with(|s| s.set_job(job, target));
    }

    /// A point ended: what bound it, and its error.
    pub fn point_done(&self, p: &PointResult) {
        self.with(|s| s.point_done(p));
    }

    /// A point could not run at all (`what` says why).
    pub fn failed(&self, what: &str) {
        self.with(|s| {
            s.errors.push(what.to_string());
            s.seq += 1;
        });
    }

    /// The run ended (the page says so and stops polling).
    pub fn finished(&self) {
        self.with(|s| s.done = true);
    }

    /// The state the page is given, as JSON (for tests).
    pub fn state_json(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        serde_json::to_string(&*s).unwrap_or_default()
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Live({})", self.addr)
    }
}

impl Observer for Live {
    fn point_started(&mut self, spec: &Spec, intervals: u32) {
        self.with(|s| s.point_started(spec, intervals));
    }

    fn interval(&mut self, spec: &Spec, rec: &IntervalRecord, _intervals: u32) {
        self.with(|s| s.interval(spec, rec));
    }

    fn host_interval(&mut self, host: &str, rec: &IntervalRecord) {
        self.with(|s| s.host_interval(host, rec));
    }

    fn note(&mut self, msg: &str) {
        self.with(|s| s.note(msg));
    }
}
