//! The comparison part of a run document: which target is which, the
//! baseline, and the servers' CPU around every point.

use serde::{Deserialize, Serialize};

/// CPU seconds one server spent during one load point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerCpu {
    /// Server name.
    pub name: String,
    /// User + system seconds.
    pub cpu_s: f64,
}

/// The comparison part of a run document: which target is which, the
/// baseline, and the server CPU of every point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareInfo {
    /// Name of the baseline target.
    pub baseline: String,
    /// (name, URL) of every target, in run order.
    pub targets: Vec<(String, String)>,
    /// Server CPU per (target name, job, point label).
    pub server_cpu: Vec<PointServerCpu>,
    /// The lab's layout (servers, versions, addresses), when the targets are a lab's.
    pub lab: Option<serde_json::Value>,
}

/// Server CPU of one point of one target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointServerCpu {
    /// Target name.
    pub target: String,
    /// Job name.
    pub job: String,
    /// Load point label.
    pub point: String,
    /// Per server.
    pub servers: Vec<ServerCpu>,
}
