//! Where the loop's points run: engine threads in this process, or a fleet
//! of agents, behind one call.

use crate::fleet::controller::{self, FleetConfig};
use crate::model::PointResult;
use crate::runner::{self, Observer, RunError, RunOptions};
use crate::target::Target;
use crate::workload::Spec;

/// How every point of a run is run.
pub struct Runner {
    /// The engine's options (threads, permissions, the stop flag, verify
    /// hooks, the lab's link counters).
    pub opts: RunOptions<'static>,
    /// The agents that run it, or `None`: this process.
    pub fleet: Option<FleetConfig>,
    /// Runs of every load point (`--repeat`, at least 1).
    pub repeat: u32,
}

impl Runner {
    /// Run one point of `spec` on `targets`, telling `obs` as it goes.
    pub fn run_point(
        &self,
        spec: &Spec,
        targets: &[Target],
        obs: &mut dyn Observer,
    ) -> Result<PointResult, RunError> {
        match &self.fleet {
            Some(f) => controller::run_point(
                f,
                spec,
                targets,
                self.opts.stop,
                self.opts.probe.as_deref(),
                obs,
            ),
            None => runner::run_point(spec, targets, &self.opts, obs),
        }
    }

    /// Check, before anything runs, that every agent of the fleet answers and
    /// may reach `targets`; gives the line to tell the user (`None`: no fleet).
    pub fn check_fleet(&self, targets: &[Target]) -> Result<Option<String>, RunError> {
        match &self.fleet {
            Some(f) => controller::check_fleet(f, targets).map(Some),
            None => Ok(None),
        }
    }
}
