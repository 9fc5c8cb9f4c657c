//! What `storlab meta` measured: the metadata mix ([`MetaReport`]: ops/s,
//! count, errors and latency per operation type) or the large-file copy
//! ([`CopyReport`]: MB/s and per-block latency each way). These are the
//! documents `storlab meta --json` writes, the `meta` member of a run
//! document ([`MetaResult`], see docs/json-schema.md), what the results
//! database stores and reads back, and what reports and diffs read.

use crate::stats::LatHist;
use serde::{Deserialize, Serialize};

/// The version of the JSON document `storlab meta --json` writes.
pub const FORMAT_VERSION: u32 = 1;

/// Latency figures of one operation type, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Latency {
    /// The figures of a histogram.
    pub fn of(h: &LatHist) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            mean_us: h.mean_ns() / 1000.0,
            p50_us: us(h.percentile(50.0)),
            p90_us: us(h.percentile(90.0)),
            p99_us: us(h.percentile(99.0)),
            p999_us: us(h.percentile(99.9)),
            max_us: us(h.max_ns()),
        }
    }
}

/// One operation type's results in the mix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// The operation (create, write, read, stat, rename, delete, list).
    pub op: String,
    /// Operations done.
    pub count: u64,
    /// Operations of this type that failed (the first failure ends the run).
    #[serde(default)]
    pub errors: u64,
    /// Operations per second of the mix's time.
    pub ops_per_s: f64,
    /// Latency figures.
    pub latency: Latency,
    /// The full latency histogram (mergeable, see docs/json-schema.md).
    pub histogram: LatHist,
}

/// A phase outside the mix: set-up (creates) or clean-up (removes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Files created or removed.
    pub files: u64,
    /// Wall-clock seconds of the phase (the slowest worker's).
    pub seconds: f64,
    /// Files per second.
    pub ops_per_s: f64,
    /// Latency of one create (open, write, close) or remove.
    pub latency: Latency,
}

/// What a metadata run was asked to do: its tree, threads, mix and run
/// time, as its report holds them and the store keeps them
/// ([`MetaSpec::Meta`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MixSpec {
    /// Directories of the tree.
    pub dirs: u32,
    /// Files per directory at set-up.
    pub files_per_dir: u32,
    /// Bytes per file.
    pub file_size: u64,
    /// Worker threads.
    pub threads: u32,
    /// The mix, as `op=weight,...`.
    pub mix: String,
    /// Seconds the mix was asked to run (`--runtime`).
    #[serde(default)]
    pub runtime_s: f64,
}

/// The result of a metadata run (`storlab meta --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetaReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The target URL.
    pub target: String,
    /// What served the operations.
    pub client: String,
    /// The run directory, relative to the target's.
    pub run_dir: String,
    /// What the run was asked to do (its members stand in this document
    /// as its own).
    #[serde(flatten)]
    pub spec: MixSpec,
    /// Seconds the mix ran (first worker's start to last worker's end).
    pub seconds: f64,
    /// The set-up phase.
    pub setup: Phase,
    /// Every operation type of the mix, in a fixed order.
    pub ops: Vec<OpResult>,
    /// All operations of the mix.
    pub total_ops: u64,
    /// All operations per second.
    pub total_ops_per_s: f64,
    /// Bytes read by read operations.
    pub bytes_read: u64,
    /// Bytes written by create and write operations.
    pub bytes_written: u64,
    /// The clean-up phase (None with `keep`).
    pub cleanup: Option<Phase>,
    /// What ended the run early, when something failed (the figures cover
    /// what was measured before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One direction of the copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyPhase {
    /// Seconds from open to close (the write's stable-making included).
    pub seconds: f64,
    /// Decimal megabytes per second.
    pub mb_per_s: f64,
    /// Blocks moved.
    pub blocks: u64,
    /// Blocks whose write or read failed (the first failure ends the copy).
    #[serde(default)]
    pub errors: u64,
    /// Latency of one block's write or read.
    pub latency: Latency,
    /// The per-block latency histogram.
    pub histogram: LatHist,
}

/// The result of a copy (`storlab meta --copy SIZE --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The target URL.
    pub target: String,
    /// What served the operations.
    pub client: String,
    /// The file, relative to the target's directory.
    pub file: String,
    /// Bytes copied each way.
    pub size: u64,
    /// Bytes per block.
    pub block_size: u64,
    /// To the store.
    pub write: CopyPhase,
    /// From the store.
    pub read: CopyPhase,
    /// What ended the copy early, when something failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a `storlab meta` run measured: the `meta` member of its run
/// document, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MetaResult {
    /// The metadata mix.
    Meta(MetaReport),
    /// The large-file copy.
    Copy(CopyReport),
}

/// One row of a meta run's table: an operation type of the mix, or one
/// direction of the copy.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow<'a> {
    /// The operation ("create", ...; "write" and "read" for the copy).
    pub op: &'a str,
    /// Operations (blocks, for the copy) done.
    pub count: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Seconds the count was measured over.
    pub seconds: f64,
    /// Operations (blocks) per second.
    pub ops_per_s: f64,
    /// Decimal MB/s (the copy only).
    pub mb_per_s: Option<f64>,
    /// Latency figures.
    pub latency: &'a Latency,
    /// The latency histogram.
    pub histogram: &'a LatHist,
}

impl MetaResult {
    /// The kind's word: "meta" or "copy" (the `kind` tag of the JSON, the
    /// database's `runs.kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            MetaResult::Meta(_) => "meta",
            MetaResult::Copy(_) => "copy",
        }
    }

    /// The target URL.
    pub fn target(&self) -> &str {
        match self {
            MetaResult::Meta(r) => &r.target,
            MetaResult::Copy(r) => &r.target,
        }
    }

    /// What served the operations.
    pub fn client(&self) -> &str {
        match self {
            MetaResult::Meta(r) => &r.client,
            MetaResult::Copy(r) => &r.client,
        }
    }

    /// What ended the run early, if anything.
    pub fn error(&self) -> Option<&str> {
        match self {
            MetaResult::Meta(r) => r.error.as_deref(),
            MetaResult::Copy(r) => r.error.as_deref(),
        }
    }

    /// What the run was asked to do, one line: "3 dirs x 10 files of 1 KiB,
    /// 2 threads, mix create=1,..., 1 s" or "a 3 MiB file in blocks of 256 KiB".
    pub fn describe(&self) -> String {
        use crate::workload::units::format_size;
        match self {
            MetaResult::Meta(r) => format!(
                "{} dirs x {} files of {}, {} threads, mix {}, {} s",
                r.spec.dirs,
                r.spec.files_per_dir,
                format_size(r.spec.file_size),
                r.spec.threads,
                r.spec.mix,
                r.spec.runtime_s
            ),
            MetaResult::Copy(r) => format!(
                "a {} file in blocks of {}",
                format_size(r.size),
                format_size(r.block_size)
            ),
        }
    }

    /// What must match for two runs' figures to be comparable: the kind and
    /// the spec (not the target, the run directory or the client). Stored as
    /// JSON beside the run and read back from it as this same type.
    pub fn spec(&self) -> MetaSpec {
        match self {
            MetaResult::Meta(r) => MetaSpec::Meta(r.spec.clone()),
            MetaResult::Copy(r) => MetaSpec::Copy {
                size: r.size,
                block_size: r.block_size,
            },
        }
    }

    /// The table's rows: every operation type that ran or failed (the mix),
    /// or the write and the read (the copy).
    pub fn rows(&self) -> Vec<OpRow<'_>> {
        let mut rows = self.all_rows();
        rows.retain(|o| o.count > 0 || o.errors > 0 || matches!(self, MetaResult::Copy(_)));
        rows
    }

    /// Every row: with the mix, also the operation types that never ran, so
    /// that a stored run reads back as it was measured.
    pub fn all_rows(&self) -> Vec<OpRow<'_>> {
        match self {
            MetaResult::Meta(r) => r
                .ops
                .iter()
                .map(|o| OpRow {
                    op: &o.op,
                    count: o.count,
                    errors: o.errors,
                    seconds: r.seconds,
                    ops_per_s: o.ops_per_s,
                    mb_per_s: None,
                    latency: &o.latency,
                    histogram: &o.histogram,
                })
                .collect(),
            MetaResult::Copy(r) => [("write", &r.write), ("read", &r.read)]
                .into_iter()
                .map(|(op, p)| OpRow {
                    op,
                    count: p.blocks,
                    errors: p.errors,
                    seconds: p.seconds,
                    ops_per_s: if p.seconds > 0.0 {
                        p.blocks as f64 / p.seconds
                    } else {
                        0.0
                    },
                    mb_per_s: Some(p.mb_per_s),
                    latency: &p.latency,
                    histogram: &p.histogram,
                })
                .collect(),
        }
    }
}

/// The spec of a metadata or copy run: what [`MetaResult::spec`] gives, as
/// the store keeps it (JSON tagged by `kind`) and reads it back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MetaSpec {
    /// The many-small-files mix.
    Meta(MixSpec),
    /// The single-large-file copy.
    Copy {
        /// Bytes of the file.
        size: u64,
        /// Bytes of each block.
        block_size: u64,
    },
}
