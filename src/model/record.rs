//! The run document: everything one `storlab run` measured, as written to
//! `--json` (schema `storlab.run`, version [`SCHEMA_VERSION`]; see
//! docs/json-schema.md). Reports read it; nothing in it is derived that cannot
//! be derived again from the counters and histograms it holds.

use crate::model::{Network, PointResult};
use crate::workload::Profile;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// Name of the JSON schema.
pub const SCHEMA: &str = "storlab.run";
/// Version of the JSON schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The machine a run measured from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// OS (PRETTY_NAME of /etc/os-release).
    pub os: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: u32,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// storlab version.
    pub storlab_version: String,
    /// The lab network the targets were reached over, when they are a lab's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
}

impl Environment {
    /// Read this machine's environment; unknown fields stay empty.
    pub fn capture() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        Environment {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            os,
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
            memory_bytes,
            storlab_version: env!("CARGO_PKG_VERSION").to_string(),
            network: None,
        }
    }
}

/// One job (a workload, a job file or CLI flags) and its load points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Job name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Profile of a built-in workload.
    pub profile: Option<Profile>,
    /// Every load point that ran, in order.
    pub points: Vec<PointResult>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The command line.
    pub command: Vec<String>,
    /// Unix time the run started, seconds.
    pub started_unix: f64,
    /// The measuring machine.
    pub environment: Environment,
    /// Jobs, in order.
    pub jobs: Vec<JobRecord>,
    /// Ended early by the user (Ctrl-C, SIGTERM).
    pub interrupted: bool,
    /// What ended the run early, if anything failed.
    pub error: Option<String>,
    /// Still running when this was written (a later write replaces it).
    pub complete: bool,
    /// For `storlab compare`: target names, the baseline, server CPU, the lab's layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<super::CompareInfo>,
    /// For `storlab meta`: what the metadata mix or the copy measured (such
    /// a run has no jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<super::meta::MetaResult>,
}

impl RunRecord {
    /// An empty record for a run starting now.
    pub fn new(command: Vec<String>) -> Self {
        RunRecord {
            schema: SCHEMA.to_string(),
            schema_version: SCHEMA_VERSION,
            command,
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            environment: Environment::capture(),
            jobs: Vec::new(),
            interrupted: false,
            error: None,
            complete: false,
            compare: None,
            meta: None,
        }
    }

    /// Parse a run document, checking its schema and version.
    pub fn from_json(text: &str, origin: &str) -> Result<RunRecord, String> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{origin}: not a storlab result (invalid JSON: {e})"))?;
        let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema.is_empty()
            && let Some(r) = RunRecord::of_meta_json(&v, origin)
        {
            return r;
        }
        if schema != SCHEMA {
            return Err(format!(
                "{origin}: not a storlab result (schema {schema:?}, expected {SCHEMA:?}, \
                 or a `storlab meta --json` document)"
            ));
        }
        let version = v
            .get("schema_version")
            .and_then(|s| s.as_u64())
            .unwrap_or(0);
        if version != SCHEMA_VERSION as u64 {
            return Err(format!(
                "{origin}: schema version {version} is not supported by this storlab (it reads version {SCHEMA_VERSION})"
            ));
        }
        serde_json::from_value(v).map_err(|e| format!("{origin}: malformed storlab result: {e}"))
    }

    /// A `storlab meta --json` document (the bare metadata or copy report,
    /// told apart by its members) as a run with no jobs; `None` when `v` is
    /// neither. The document holds no command line, start time or machine:
    /// those stay empty rather than be taken from the reader's.
    fn of_meta_json(v: &serde_json::Value, origin: &str) -> Option<Result<RunRecord, String>> {
        use super::meta::{CopyReport, MetaReport, MetaResult};
        v.get("format_version")?;
        let meta = if v.get("ops").is_some() {
            serde_json::from_value::<MetaReport>(v.clone()).map(MetaResult::Meta)
        } else if v.get("write").is_some() && v.get("read").is_some() {
            serde_json::from_value::<CopyReport>(v.clone()).map(MetaResult::Copy)
        } else {
            return None;
        };
        Some(
            meta.map(|m| RunRecord {
                schema: SCHEMA.to_string(),
                schema_version: SCHEMA_VERSION,
                command: Vec::new(),
                started_unix: 0.0,
                environment: Environment::default(),
                jobs: Vec::new(),
                interrupted: false,
                error: m.error().map(str::to_string),
                complete: true,
                compare: None,
                meta: Some(m),
            })
            .map_err(|e| format!("{origin}: malformed `storlab meta --json` document: {e}")),
        )
    }

    /// How the run ended, in a word: error, interrupted, complete, or
    /// incomplete (never finished: still running, or storlab was killed).
    pub fn status(&self) -> &'static str {
        if self.error.is_some() {
            "error"
        } else if self.interrupted {
            "interrupted"
        } else if self.complete {
            "complete"
        } else {
            "incomplete"
        }
    }

    /// The kind of run: "block" (load points), or a `storlab meta` run's
    /// "meta" or "copy".
    pub fn kind(&self) -> &'static str {
        self.meta.as_ref().map_or("block", |m| m.kind())
    }

    /// In a comparison, each point's target called by its short name
    /// ("nfs3") instead of its URL; other runs unchanged.
    pub fn with_target_names(mut self) -> RunRecord {
        if let Some(c) = self.compare.clone() {
            for p in self.jobs.iter_mut().flat_map(|j| j.points.iter_mut()) {
                if let Some((name, _)) = c
                    .targets
                    .iter()
                    .find(|(_, url)| p.targets.first() == Some(url))
                {
                    p.targets = vec![name.clone()];
                }
            }
        }
        self
    }
}

/// Write `bytes` to `path` atomically (a temporary file renamed over it), so a
/// crash never leaves a half-written result.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}
