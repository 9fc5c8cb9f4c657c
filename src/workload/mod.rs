//! Workload model: what the user asks storlab to do, before anything runs.
//!
//! A [`Job`] is a named list of load points ([`Spec`]s). A `Spec` is one fully
//! resolved load point: groups of "VMs" (Iometer's worker groups), each VM with
//! its workers and disks, an access pattern per group, the data region, content,
//! write mode and timing. Specs come from the [`catalogue`] of named workloads
//! (the built-in one and the user's files), from TOML job files ([`jobfile`]),
//! which the catalogue's entries are read through too, or from fio-named CLI
//! flags ([`flags`]); every key means the same in all of them ([`settings`]),
//! and all are checked by [`validate`] before anything runs.

pub mod catalogue;
pub mod content;
pub mod curve;
pub mod error;
pub mod fio;
pub mod flags;
pub mod icf;
pub mod import;
pub mod jobfile;
pub mod pace;
pub mod pattern;
pub mod replay;
pub mod rng;
pub mod settings;
pub mod skew;
pub mod steady;
#[cfg(test)]
pub(crate) mod testing;
pub mod units;
pub mod validate;

pub use pace::RateMode;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The default per-I/O timeout (`io_timeout`, enforced by the engine): long enough for a server to fail over or a storage
/// array to retry a path, short enough that a dead target ends the run.
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(30);

/// [`DEFAULT_IO_TIMEOUT`], for serde's `default` of records without the field.
pub fn default_io_timeout() -> Duration {
    DEFAULT_IO_TIMEOUT
}

/// Default seed of every pseudo-random choice ("storlab" in leetspeak, roughly).
pub const DEFAULT_SEED: u64 = 0x0570_21ab;
/// Default region size per disk.
pub const DEFAULT_SIZE: u64 = 64 << 20;
/// Default measured time.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(10);

/// Shortest accepted non-zero limit.
pub const MIN_IO_TIMEOUT: Duration = Duration::from_millis(10);

/// Direction of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Read from the target.
    Read,
    /// Write to the target.
    Write,
}

/// Block sizes with relative weights (fio's `bssplit`, Iometer's size mix).
/// A single size is a one-entry mix with weight 100.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockSizes(pub Vec<(u64, u32)>);

impl BlockSizes {
    /// One block size.
    pub fn one(bytes: u64) -> Self {
        BlockSizes(vec![(bytes, 100)])
    }
    /// The smallest size in the mix.
    pub fn min(&self) -> u64 {
        self.0.iter().map(|(s, _)| *s).min().unwrap_or(0)
    }
    /// The largest size in the mix (the buffer size each slot needs).
    pub fn max(&self) -> u64 {
        self.0.iter().map(|(s, _)| *s).max().unwrap_or(0)
    }
}

/// A rate cap for one worker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// I/Os per second.
    Iops(u64),
    /// Bytes per second.
    Bytes(u64),
}

/// How one group's workers access their disks (an Iometer access specification).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// Block size mix.
    pub bs: BlockSizes,
    /// Share of I/Os that are reads, 0..=100.
    pub read_pct: u8,
    /// Share of I/Os at a random offset, 0..=100; the rest continue sequentially.
    pub random_pct: u8,
    /// Where the random offsets fall (fio's `random_distribution`, [`skew`]).
    #[serde(default, skip_serializing_if = "skew::Distribution::is_uniform")]
    pub distribution: skew::Distribution,
    /// Offset alignment in bytes; `None` means the smallest block size.
    pub align: Option<u64>,
    /// Outstanding I/Os per worker, spread round-robin over the VM's disks.
    pub iodepth: u32,
    /// Completions the engine waits for before it refills the queue (fio's
    /// `iodepth_batch_complete_min`; 1: refill as each completes). A batch's
    /// earlier completions are stamped when the batch is reaped.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch_complete_min: u32,
    /// Requests the engine queues before it submits them together (fio's
    /// `iodepth_batch_submit`; 1: each as it is queued). 0: the backend's
    /// choice ([`crate::io::Backend::commit_each`]: each request on a device
    /// queue, else one submit per refill).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub submit_batch: u32,
    /// Optional rate cap per worker.
    pub rate: Option<Rate>,
    /// How the rate cap paces I/O and where latency counts from: closed (from
    /// submission, fio-like) or open (from each I/O's scheduled time).
    #[serde(default)]
    pub rate_mode: RateMode,
    /// A pause after every burst of I/Os (fio's `thinktime`, Iometer's
    /// transfer delay and burst length); `None`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
}

/// A worker's pause between bursts: after issuing `blocks` I/Os it waits
/// for them all to complete, then pauses `time` (spinning the first `spin`
/// of it) before the next burst, as fio's `thinktime` does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Think {
    /// I/Os per burst (`thinktime_blocks`, Iometer's burst length), 1 or more.
    pub blocks: u32,
    /// The pause (`thinktime`, Iometer's transfer delay).
    #[serde(with = "secs")]
    pub time: Duration,
    /// The share of the pause spent spinning rather than asleep
    /// (`thinktime_spin`), at most `time`.
    #[serde(with = "secs", default, skip_serializing_if = "Duration::is_zero")]
    pub spin: Duration,
}

/// The default of [`Access::batch_complete_min`].
fn one() -> u32 {
    1
}

/// Whether `n` is 0 (left out of the JSON: [`Access::submit_batch`] unset).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Whether `b` is false (left out of the JSON, as before the setting existed).
fn is_false(b: &bool) -> bool {
    !*b
}

/// Whether `n` is 1 (left out of the JSON, as before the setting existed).
fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Access {
    /// The effective alignment.
    pub fn alignment(&self) -> u64 {
        self.align.unwrap_or_else(|| self.bs.min())
    }
}

/// A set of identical "VMs": each VM has `workers_per_vm` workers sharing its
/// `disks_per_vm` disks, all with the same access pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Name used in output ("readers", "vm").
    pub name: String,
    /// Number of VMs in the group.
    pub vms: u32,
    /// Workers (Iometer workers, fio numjobs) per VM.
    pub workers_per_vm: u32,
    /// Disks (files or LUNs) per VM.
    pub disks_per_vm: u32,
    /// The access pattern.
    pub access: Access,
}

/// Data written by prepare and by write I/Os.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// Incompressible, unique per block.
    Random,
    /// All zero bytes.
    Zeros,
    /// `compress_pct` of each block is zeros (compressible share), and
    /// `dedupe_pct` of blocks are copies of one block (dedupable share).
    Mixed {
        /// Compressible share of each block, 0..=100.
        compress_pct: u8,
        /// Share of blocks that repeat one canonical block, 0..=100.
        dedupe_pct: u8,
    },
}

/// Synchronous-write semantics requested for writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// No per-write durability.
    None,
    /// O_DSYNC: data durable when acknowledged.
    Dsync,
    /// O_SYNC: data and metadata durable when acknowledged.
    Sync,
}

/// The engine a `file:` target's I/O runs on (`ioengine`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// io_uring: up to `iodepth` requests in flight per worker.
    #[default]
    IoUring,
    /// fio's psync: each request a pread/pwrite on the engine thread, one in
    /// flight per worker ([`Job::one_in_flight`]).
    Psync,
}

impl IoEngine {
    /// Every accepted spelling.
    pub const ALLOWED: &'static str = "io_uring, psync";

    /// The name, as the option takes it.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::IoUring => "io_uring",
            IoEngine::Psync => "psync",
        }
    }

    fn is_default(&self) -> bool {
        *self == IoEngine::default()
    }
}

/// How the VM disks mapped to one single target (a file, device, LUN, NBD
/// export or NFS file) share it. A directory target always gets a file per disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskLayout {
    /// Disk `k` of the target gets its own slice `[offset + k·size, offset +
    /// (k+1)·size)`, as each VM had its own VMDK on a shared datastore.
    #[default]
    Slice,
    /// Every disk uses the same region `[offset, offset + size)`.
    Shared,
}

impl DiskLayout {
    /// Every accepted spelling.
    pub const ALLOWED: &'static str = "slice, shared";
}

/// One load point, fully resolved: everything the engine needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Load point label ("32 VMs", "bs=8k write").
    pub label: String,
    /// VM groups; most specs have one.
    pub groups: Vec<Group>,
    /// Offset of the region used on each disk, bytes.
    pub offset: u64,
    /// Size of the region used on each disk (and of each created file), bytes.
    pub size: u64,
    /// How disks sharing a single target are laid out on it.
    #[serde(default)]
    pub disk_layout: DiskLayout,
    /// Data content.
    pub content: Content,
    /// O_DIRECT (bypass the page cache).
    pub direct: bool,
    /// Synchronous writes.
    pub sync: SyncMode,
    /// `sqpoll`: a kernel thread polls the io_uring submission queue
    /// (IORING_SETUP_SQPOLL); file: targets only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sqpoll: bool,
    /// `sqpoll_cpu`: the CPU the SQPOLL thread is pinned to (needs `sqpoll`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll_cpu: Option<u32>,
    /// `hipri`: completions are polled (IORING_SETUP_IOPOLL; needs `direct`
    /// and a device with poll queues); file: targets only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hipri: bool,
    /// `ioengine`: io_uring, or psync (file: targets only).
    #[serde(default, skip_serializing_if = "IoEngine::is_default")]
    pub ioengine: IoEngine,
    /// Ramp-up: measured but excluded from the summary.
    #[serde(with = "secs")]
    pub ramp: Duration,
    /// Measured duration (an upper bound when `io_limit` is set; zero with
    /// `io_limit` means no time bound: the point ends when the bytes are done).
    #[serde(with = "secs")]
    pub runtime: Duration,
    /// Statistics interval.
    #[serde(with = "secs")]
    pub interval: Duration,
    /// Stop each worker after it transferred this many bytes (fio's io_size).
    pub io_limit: Option<u64>,
    /// Seed of every pseudo-random choice (offsets, mixes, content).
    pub seed: u64,
    /// An I/O in flight longer than this ends the run with an error naming it;
    /// zero: no limit. Records without it read as the default.
    #[serde(default = "crate::workload::default_io_timeout", with = "secs")]
    pub io_timeout: Duration,
    /// A protocol target's lost connection is connected again for up to
    /// this long, and what was in flight on it sent again (the outage is
    /// recorded, `crate::io::Outage`); zero (the default): a lost connection
    /// ends the run.
    #[serde(default, with = "secs", skip_serializing_if = "Duration::is_zero")]
    pub reconnect_timeout: Duration,
    /// Verify mode: every written block carries a checked header and every
    /// read is checked (docs/verify.md).
    #[serde(default)]
    pub verify: bool,
    /// Durability journal of acknowledged writes (implies `verify`).
    #[serde(default)]
    pub journal: Option<std::path::PathBuf>,
    /// The steady-state gate: the ramp ends once this figure has settled
    /// (`ramp` is then the longest ramp); none: the ramp is `ramp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<steady::SteadyGate>,
    /// A trace replayed instead of the groups' access pattern
    /// (`--replay`, [`replay`]): its one worker issues each I/O of the trace
    /// at its due time; none: the groups' pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<replay::Replay>,
}

impl Spec {
    /// Total workers over all groups.
    pub fn total_workers(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| g.vms as u64 * g.workers_per_vm as u64)
            .sum()
    }
    /// Total VMs over all groups.
    pub fn total_vms(&self) -> u64 {
        self.groups.iter().map(|g| g.vms as u64).sum()
    }
    /// Total outstanding I/Os over all workers.
    pub fn total_iodepth(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| g.vms as u64 * g.workers_per_vm as u64 * g.access.iodepth as u64)
            .sum()
    }
    /// Intervals of ramp-up (rounded up to whole intervals).
    pub fn ramp_intervals(&self) -> u32 {
        self.ramp
            .as_nanos()
            .div_ceil(self.interval.as_nanos().max(1)) as u32
    }

    /// Whether any group writes.
    pub fn writes(&self) -> bool {
        self.groups.iter().any(|g| g.access.read_pct < 100)
    }

    /// The I/O mode in a few words: "direct", "buffered", "direct, O_DSYNC".
    pub fn io_mode(&self) -> String {
        let mut m = String::from(if self.direct { "direct" } else { "buffered" });
        match self.sync {
            SyncMode::None => {}
            SyncMode::Dsync => m.push_str(", O_DSYNC"),
            SyncMode::Sync => m.push_str(", O_SYNC"),
        }
        if self.replay.is_some() {
            m.push_str(", trace replayed open loop (latency from each I/O's due time)");
        } else if self.latency_from_schedule() {
            m.push_str(", open-loop rate (latency from scheduled time)");
        }
        m
    }

    /// Whether the point has no time bound of its own (zero runtime): it
    /// ends once every worker moved its `io_limit` or the replayed trace ends.
    pub fn open_ended(&self) -> bool {
        self.runtime.is_zero() && (self.io_limit.is_some() || self.replay.is_some())
    }

    /// Whether latency is measured from each I/O's scheduled time (some group
    /// has an open-loop rate, or a trace is replayed) rather than from its submission.
    pub fn latency_from_schedule(&self) -> bool {
        self.replay.is_some()
            || self
                .groups
                .iter()
                .any(|g| g.access.rate.is_some() && g.access.rate_mode == RateMode::Open)
    }

    /// One line describing the access of every group, for jobs without a description.
    pub fn describe(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let a = &g.access;
                let bs: Vec<String> = a.bs.0.iter().map(|(s, _)| units::format_size(*s)).collect();
                format!(
                    "{} {}% read {}% random, {} VM x {} worker x {} disk, iodepth {} per worker",
                    bs.join("/"),
                    a.read_pct,
                    a.random_pct,
                    g.vms,
                    g.workers_per_vm,
                    g.disks_per_vm,
                    a.iodepth
                )
            })
            .collect();
        format!("{} ({})", groups.join(" + "), self.io_mode())
    }
}

/// Run length and size profile of a built-in workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The study's own durations and sizes.
    Full,
    /// Same shape in seconds and MiBs.
    Quick,
}

impl Profile {
    /// Both profiles, full first.
    pub const ALL: [Profile; 2] = [Profile::Full, Profile::Quick];

    /// "full" or "quick", as on the command line and in catalogue files.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Quick => "quick",
        }
    }
}

/// Where one value of a built-in workload comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The field ("iodepth", "size").
    pub field: String,
    /// "study 000", or "storlab default: study silent".
    pub source: String,
}

/// A named, runnable job: one or more load points run in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Name (a catalogue name, a job file's stem, or "cli").
    pub name: String,
    /// One line of description.
    pub description: String,
    /// Profile used to build it.
    pub profile: Option<Profile>,
    /// Load points, in order.
    pub points: Vec<Spec>,
    /// Where each value comes from (built-ins only).
    pub provenance: Vec<Provenance>,
    /// A vdbench-style curve: percentages of each point's measured maximum to
    /// run open loop after an unthrottled run ([`curve`]); `None`: no curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Vec<u32>>,
}

impl Job {
    /// psync keeps one I/O in flight per worker, as fio's does whatever
    /// `iodepth` says: every group of a psync point deeper than 1 runs at
    /// iodepth 1 (its batch settings with it). A note for each point changed.
    pub fn one_in_flight(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        for p in self
            .points
            .iter_mut()
            .filter(|p| p.ioengine == IoEngine::Psync)
        {
            let deepest = p.groups.iter().map(|g| g.access.iodepth).max().unwrap_or(1);
            if deepest > 1 {
                notes.push(format!(
                    "job {}, point {:?}: ioengine psync keeps one I/O in flight per worker \
                     whatever iodepth says, so iodepth = 1 (not {deepest})",
                    self.name, p.label
                ));
            }
            for a in p.groups.iter_mut().map(|g| &mut g.access) {
                a.iodepth = 1;
                a.batch_complete_min = 1;
                a.submit_batch = 0;
            }
        }
        notes
    }
}

/// A group with the job-file defaults: 1 VM, 1 worker, 1 disk, 4k random reads, iodepth 1.
pub fn default_group(name: &str) -> Group {
    Group {
        name: name.to_string(),
        vms: 1,
        workers_per_vm: 1,
        disks_per_vm: 1,
        access: Access {
            bs: BlockSizes::one(4096),
            read_pct: 100,
            random_pct: 100,
            distribution: skew::Distribution::Uniform,
            align: None,
            iodepth: 1,
            batch_complete_min: 1,
            submit_batch: 0,
            rate: None,
            rate_mode: RateMode::Closed,
            think: None,
        },
    }
}

/// A load point with the job-file defaults and no groups.
pub fn default_spec(label: &str) -> Spec {
    Spec {
        label: label.to_string(),
        groups: Vec::new(),
        offset: 0,
        size: DEFAULT_SIZE,
        disk_layout: DiskLayout::Slice,
        content: Content::Random,
        direct: false,
        sync: SyncMode::None,
        sqpoll: false,
        sqpoll_cpu: None,
        hipri: false,
        ioengine: IoEngine::IoUring,
        ramp: Duration::ZERO,
        runtime: DEFAULT_RUNTIME,
        interval: Duration::from_secs(1),
        io_limit: None,
        seed: DEFAULT_SEED,
        io_timeout: DEFAULT_IO_TIMEOUT,
        reconnect_timeout: Duration::ZERO,
        verify: false,
        journal: None,
        steady: None,
        replay: None,
    }
}

/// A small valid spec for unit tests: `vms` VMs of `workers` workers over
/// `disks` disks, 4 KiB 75% read 100% random, iodepth 2, 1 MiB per disk, 1 s.
#[cfg(test)]
pub(crate) fn test_spec(vms: u32, workers: u32, disks: u32) -> Spec {
    let mut group = default_group("vm");
    group.vms = vms;
    group.workers_per_vm = workers;
    group.disks_per_vm = disks;
    group.access.read_pct = 75;
    group.access.iodepth = 2;
    let mut spec = default_spec("t");
    spec.groups = vec![group];
    spec.size = 1 << 20;
    spec.runtime = Duration::from_secs(1);
    spec.seed = 1;
    spec
}

/// Serialize durations as fractional seconds.
pub(crate) mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(serde::de::Error::custom(
                "duration must be a non-negative number of seconds",
            ));
        }
        // A finite number can still be too large (found by the agent_request
        // fuzz target: 3.6e43 seconds panicked in from_secs_f64).
        Duration::try_from_secs_f64(v).map_err(|_| {
            serde::de::Error::custom(format!(
                "duration {v} s is too large (at most {} s)",
                u64::MAX
            ))
        })
    }
}
