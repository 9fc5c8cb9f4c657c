//! The load point as the wire carries it: [`WireSpec`] and every type it
//! holds, each the wire's own, mirroring the in-memory `crate::workload`
//! types it is converted from and to.
//!
//! A change to `workload::Spec` must not change the protocol unseen. So the
//! conversions destructure every in-memory struct whole (no `..`) and match
//! every variant: a field or a variant added there fails to compile until
//! it is carried here, and a change here changes the schema that
//! `super::tests` pins to [`super::PROTOCOL_VERSION`].
//!
//! The JSON is the one the spec had on the wire before these types existed
//! (protocol 6): the same keys, defaults and left-out values.

use crate::workload::secs;
/// Durations as non-negative fractional seconds, refused past what a
/// `Duration` holds: the same format as the run documents'.
use crate::workload::skew::Distribution;
use crate::workload::steady::{SteadyCriterion, SteadyGate, SteadyMetric};
use crate::workload::{
    Access, BlockSizes, Content, DiskLayout, Group, IoEngine, Rate, RateMode, Spec, SyncMode, Think,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One load point, whole: what every agent of the point runs a share of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireSpec {
    /// Load point label.
    pub label: String,
    /// VM groups.
    pub groups: Vec<WireGroup>,
    /// Offset of the region used on each disk, bytes.
    pub offset: u64,
    /// Size of the region used on each disk, bytes.
    pub size: u64,
    /// How disks sharing a single target are laid out on it.
    #[serde(default)]
    pub disk_layout: WireDiskLayout,
    /// Data content.
    pub content: WireContent,
    /// O_DIRECT.
    pub direct: bool,
    /// Synchronous writes.
    pub sync: WireSyncMode,
    /// io_uring SQPOLL (left out when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub sqpoll: bool,
    /// The SQPOLL thread's CPU (left out when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll_cpu: Option<u32>,
    /// Polled completions (left out when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hipri: bool,
    /// The engine of `file:` targets (left out when io_uring).
    #[serde(default, skip_serializing_if = "WireIoEngine::is_default")]
    pub ioengine: WireIoEngine,
    /// Ramp-up, seconds.
    #[serde(with = "secs")]
    pub ramp: Duration,
    /// Measured duration, seconds.
    #[serde(with = "secs")]
    pub runtime: Duration,
    /// Statistics interval, seconds.
    #[serde(with = "secs")]
    pub interval: Duration,
    /// Bytes after which each worker stops.
    pub io_limit: Option<u64>,
    /// Seed of every pseudo-random choice.
    pub seed: u64,
    /// Per-I/O timeout, seconds (zero: none); 30 s when left out.
    #[serde(default = "default_io_timeout", with = "secs")]
    pub io_timeout: Duration,
    /// Reconnect timeout, seconds (zero or left out: none).
    #[serde(default, with = "secs", skip_serializing_if = "Duration::is_zero")]
    pub reconnect_timeout: Duration,
    /// Verify mode.
    #[serde(default)]
    pub verify: bool,
    /// Durability journal of acknowledged writes (the controller's path; an
    /// agent writes its own beside it).
    #[serde(default)]
    pub journal: Option<PathBuf>,
    /// The steady-state gate (left out when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<WireSteadyGate>,
}

/// A set of identical VMs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireGroup {
    /// Name used in output.
    pub name: String,
    /// Number of VMs.
    pub vms: u32,
    /// Workers per VM.
    pub workers_per_vm: u32,
    /// Disks per VM.
    pub disks_per_vm: u32,
    /// The access pattern.
    pub access: WireAccess,
}

/// How one group's workers access their disks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireAccess {
    /// Block size mix.
    pub bs: WireBlockSizes,
    /// Share of reads, 0..=100.
    pub read_pct: u8,
    /// Share of random offsets, 0..=100.
    pub random_pct: u8,
    /// Where random offsets fall, in fio's spelling (`random`, `zipf:1.2`).
    #[serde(default)]
    pub distribution: Distribution,
    /// Offset alignment, bytes; none: the smallest block size.
    pub align: Option<u64>,
    /// Outstanding I/Os per worker.
    pub iodepth: u32,
    /// Completions awaited before a refill (left out when 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch_complete_min: u32,
    /// Requests submitted together (left out when 0: the backend's choice).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub submit_batch: u32,
    /// Rate cap per worker.
    pub rate: Option<WireRate>,
    /// How the rate cap paces I/O.
    #[serde(default)]
    pub rate_mode: WireRateMode,
    /// The pause between bursts.
    pub think: Option<WireThink>,
}

/// A worker's pause between bursts ([`crate::workload::Think`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireThink {
    /// I/Os per burst.
    pub blocks: u32,
    /// The pause, seconds.
    #[serde(with = "secs")]
    pub time: Duration,
    /// The share spun, seconds.
    #[serde(with = "secs")]
    pub spin: Duration,
}

/// Block sizes with relative weights: `[[bytes, weight], ...]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireBlockSizes(pub Vec<(u64, u32)>);

/// A rate cap for one worker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireRate {
    /// I/Os per second.
    Iops(u64),
    /// Bytes per second.
    Bytes(u64),
}

/// Closed- or open-loop pacing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireRateMode {
    /// Closed loop.
    #[default]
    Closed,
    /// Open loop.
    Open,
}

/// The data written.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireContent {
    /// Incompressible.
    Random,
    /// Zero bytes.
    Zeros,
    /// Partly compressible, partly dedupable.
    Mixed {
        /// Compressible share of each block, 0..=100.
        compress_pct: u8,
        /// Share of blocks that repeat one block, 0..=100.
        dedupe_pct: u8,
    },
}

/// Synchronous-write semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireSyncMode {
    /// None.
    None,
    /// O_DSYNC.
    Dsync,
    /// O_SYNC.
    Sync,
}

/// The engine of a `file:` target's I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireIoEngine {
    /// io_uring.
    #[default]
    IoUring,
    /// pread/pwrite.
    Psync,
}

impl WireIoEngine {
    fn is_default(&self) -> bool {
        *self == WireIoEngine::default()
    }
}

/// How VM disks share one single target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireDiskLayout {
    /// A slice per disk.
    #[default]
    Slice,
    /// One region for all.
    Shared,
}

/// The steady-state gate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireSteadyGate {
    /// What must settle.
    pub metric: WireSteadyMetric,
    /// How.
    pub criterion: WireSteadyCriterion,
    /// Over how long, seconds.
    #[serde(with = "secs")]
    pub window: Duration,
    /// How long into the ramp it starts watching, seconds; 0 when left out.
    #[serde(with = "secs", default)]
    pub delay: Duration,
}

/// The figure the gate watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireSteadyMetric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency.
    Lat,
}

/// How settled is settled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireSteadyCriterion {
    /// Every interval within this % of the window's mean.
    Band(f64),
    /// The slope at most this % of the mean per second.
    Slope(f64),
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn one() -> u32 {
    1
}

/// What an `io_timeout` left out of the JSON means (the wire's own default,
/// the same 30 s as `workload::DEFAULT_IO_TIMEOUT` today).
fn default_io_timeout() -> Duration {
    Duration::from_secs(30)
}

impl From<&Spec> for WireSpec {
    fn from(s: &Spec) -> Self {
        let Spec {
            label,
            groups,
            offset,
            size,
            disk_layout,
            content,
            direct,
            sync,
            sqpoll,
            sqpoll_cpu,
            hipri,
            ioengine,
            ramp,
            runtime,
            interval,
            io_limit,
            seed,
            io_timeout,
            reconnect_timeout,
            verify,
            journal,
            steady,
            // Not carried: a replay runs in this process only, and the CLI
            // refuses --replay with --hosts before any agent is asked.
            replay: _,
        } = s;
        WireSpec {
            label: label.clone(),
            groups: groups.iter().map(WireGroup::from).collect(),
            offset: *offset,
            size: *size,
            disk_layout: (*disk_layout).into(),
            content: (*content).into(),
            direct: *direct,
            sync: (*sync).into(),
            sqpoll: *sqpoll,
            sqpoll_cpu: *sqpoll_cpu,
            hipri: *hipri,
            ioengine: (*ioengine).into(),
            ramp: *ramp,
            runtime: *runtime,
            interval: *interval,
            io_limit: *io_limit,
            seed: *seed,
            io_timeout: *io_timeout,
            reconnect_timeout: *reconnect_timeout,
            verify: *verify,
            journal: journal.clone(),
            steady: steady.map(Into::into),
        }
    }
}

impl From<WireSpec> for Spec {
    fn from(w: WireSpec) -> Self {
        let WireSpec {
            label,
            groups,
            offset,
            size,
            disk_layout,
            content,
            direct,
            sync,
            sqpoll,
            sqpoll_cpu,
            hipri,
            ioengine,
            ramp,
            runtime,
            interval,
            io_limit,
            seed,
            io_timeout,
            reconnect_timeout,
            verify,
            journal,
            steady,
        } = w;
        Spec {
            label,
            groups: groups.into_iter().map(Group::from).collect(),
            offset,
            size,
            disk_layout: disk_layout.into(),
            content: content.into(),
            direct,
            sync: sync.into(),
            sqpoll,
            sqpoll_cpu,
            hipri,
            ioengine: ioengine.into(),
            ramp,
            runtime,
            interval,
            io_limit,
            seed,
            io_timeout,
            reconnect_timeout,
            verify,
            journal,
            steady: steady.map(Into::into),
            replay: None,
        }
    }
}

impl From<&Group> for WireGroup {
    fn from(g: &Group) -> Self {
        let Group {
            name,
            vms,
            workers_per_vm,
            disks_per_vm,
            access,
        } = g;
        WireGroup {
            name: name.clone(),
            vms: *vms,
            workers_per_vm: *workers_per_vm,
            disks_per_vm: *disks_per_vm,
            access: access.into(),
        }
    }
}

impl From<WireGroup> for Group {
    fn from(g: WireGroup) -> Self {
        let WireGroup {
            name,
            vms,
            workers_per_vm,
            disks_per_vm,
            access,
        } = g;
        Group {
            name,
            vms,
            workers_per_vm,
            disks_per_vm,
            access: access.into(),
        }
    }
}

impl From<&Access> for WireAccess {
    fn from(a: &Access) -> Self {
        let Access {
            bs: BlockSizes(bs),
            read_pct,
            random_pct,
            distribution,
            align,
            iodepth,
            batch_complete_min,
            submit_batch,
            rate,
            rate_mode,
            think,
        } = a;
        WireAccess {
            bs: WireBlockSizes(bs.clone()),
            read_pct: *read_pct,
            random_pct: *random_pct,
            distribution: distribution.clone(),
            align: *align,
            iodepth: *iodepth,
            batch_complete_min: *batch_complete_min,
            submit_batch: *submit_batch,
            rate: rate.map(Into::into),
            rate_mode: (*rate_mode).into(),
            think: think.map(|t| WireThink {
                blocks: t.blocks,
                time: t.time,
                spin: t.spin,
            }),
        }
    }
}

impl From<WireAccess> for Access {
    fn from(a: WireAccess) -> Self {
        let WireAccess {
            bs: WireBlockSizes(bs),
            read_pct,
            random_pct,
            distribution,
            align,
            iodepth,
            batch_complete_min,
            submit_batch,
            rate,
            rate_mode,
            think,
        } = a;
        Access {
            bs: BlockSizes(bs),
            read_pct,
            random_pct,
            distribution,
            align,
            iodepth,
            batch_complete_min,
            submit_batch,
            rate: rate.map(Into::into),
            rate_mode: rate_mode.into(),
            think: think.map(|t| Think {
                blocks: t.blocks,
                time: t.time,
                spin: t.spin,
            }),
        }
    }
}

impl From<SteadyGate> for WireSteadyGate {
    fn from(g: SteadyGate) -> Self {
        let SteadyGate {
            metric,
            criterion,
            window,
            delay,
        } = g;
        WireSteadyGate {
            metric: metric.into(),
            criterion: criterion.into(),
            window,
            delay,
        }
    }
}

impl From<WireSteadyGate> for SteadyGate {
    fn from(g: WireSteadyGate) -> Self {
        let WireSteadyGate {
            metric,
            criterion,
            window,
            delay,
        } = g;
        SteadyGate {
            metric: metric.into(),
            criterion: criterion.into(),
            window,
            delay,
        }
    }
}

/// Both conversions of enums that mirror each other variant for variant
/// (each `match` names every variant, so a new one fails to compile here).
macro_rules! mirror {
    ($ours:ident <=> $wire:ident { $($v:ident $(($x:ident))? $({ $($f:ident),* })?),* $(,)? }) => {
        impl From<$ours> for $wire {
            fn from(v: $ours) -> Self {
                match v {
                    $($ours::$v $(($x))? $({ $($f),* })? => $wire::$v $(($x))? $({ $($f),* })?,)*
                }
            }
        }
        impl From<$wire> for $ours {
            fn from(v: $wire) -> Self {
                match v {
                    $($wire::$v $(($x))? $({ $($f),* })? => $ours::$v $(($x))? $({ $($f),* })?,)*
                }
            }
        }
    };
}

mirror!(Rate <=> WireRate { Iops(n), Bytes(n) });
mirror!(RateMode <=> WireRateMode { Closed, Open });
mirror!(Content <=> WireContent { Random, Zeros, Mixed { compress_pct, dedupe_pct } });
mirror!(SyncMode <=> WireSyncMode { None, Dsync, Sync });
mirror!(IoEngine <=> WireIoEngine { IoUring, Psync });
mirror!(DiskLayout <=> WireDiskLayout { Slice, Shared });
mirror!(SteadyMetric <=> WireSteadyMetric { Iops, Bw, Lat });
mirror!(SteadyCriterion <=> WireSteadyCriterion { Band(p), Slope(p) });

/// Samples for the tests of the wire (here and in `super::tests`).
#[cfg(test)]
pub(super) mod samples {
    use super::*;

    /// A load point with every field set away from its default (every
    /// option present, every flag on, both rate kinds), written as a whole
    /// struct so that a field added to `Spec` or what it holds must be set
    /// here too.
    pub fn full_spec() -> Spec {
        let access = |rate, rate_mode| Access {
            bs: BlockSizes(vec![(4096, 60), (65536, 40)]),
            read_pct: 70,
            random_pct: 80,
            distribution: Distribution::Zipf {
                theta: 1.2,
                center: Some(0.5),
            },
            align: Some(512),
            iodepth: 8,
            batch_complete_min: 4,
            submit_batch: 2,
            rate: Some(rate),
            rate_mode,
            think: Some(Think {
                blocks: 4,
                time: Duration::from_micros(250),
                spin: Duration::from_micros(50),
            }),
        };
        let group = |name: &str, access| Group {
            name: name.into(),
            vms: 3,
            workers_per_vm: 2,
            disks_per_vm: 2,
            access,
        };
        Spec {
            label: "every field".into(),
            groups: vec![
                group("a", access(Rate::Iops(500), RateMode::Open)),
                group("b", access(Rate::Bytes(1 << 20), RateMode::Closed)),
            ],
            offset: 1 << 20,
            size: 8 << 20,
            disk_layout: DiskLayout::Shared,
            content: Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 25,
            },
            direct: true,
            sync: SyncMode::Dsync,
            sqpoll: true,
            sqpoll_cpu: Some(1),
            hipri: true,
            ioengine: IoEngine::Psync,
            ramp: Duration::from_millis(1500),
            runtime: Duration::from_secs(20),
            interval: Duration::from_millis(500),
            io_limit: Some(1 << 30),
            seed: 42,
            io_timeout: Duration::from_secs(5),
            reconnect_timeout: Duration::from_secs(3),
            verify: true,
            journal: Some("/srv/journal".into()),
            steady: Some(SteadyGate {
                metric: SteadyMetric::Bw,
                criterion: SteadyCriterion::Slope(0.5),
                window: Duration::from_secs(4),
                delay: Duration::from_secs(1),
            }),
            // The one field the wire does not carry: a replay is refused
            // with --hosts (`crate::cli`), so no agent is sent one.
            replay: None,
        }
    }

    /// Every value of every enum the spec carries, as JSON, one line each
    /// (the variants the full spec cannot show at once). Each `match` names
    /// every variant, so a new one fails to compile until it is listed.
    pub fn every_variant() -> Vec<String> {
        fn line<T: Serialize>(name: &str, v: T) -> String {
            format!(
                "{name} = {}",
                serde_json::to_string(&v).expect("a wire enum serializes")
            )
        }
        let mut out = Vec::new();
        for v in [WireRate::Iops(1), WireRate::Bytes(1)] {
            match v {
                WireRate::Iops(_) | WireRate::Bytes(_) => out.push(line("rate", v)),
            }
        }
        for v in [WireRateMode::Closed, WireRateMode::Open] {
            match v {
                WireRateMode::Closed | WireRateMode::Open => out.push(line("rate_mode", v)),
            }
        }
        let mixed = WireContent::Mixed {
            compress_pct: 1,
            dedupe_pct: 1,
        };
        for v in [WireContent::Random, WireContent::Zeros, mixed] {
            match v {
                WireContent::Random | WireContent::Zeros | WireContent::Mixed { .. } => {
                    out.push(line("content", v))
                }
            }
        }
        for v in [WireSyncMode::None, WireSyncMode::Dsync, WireSyncMode::Sync] {
            match v {
                WireSyncMode::None | WireSyncMode::Dsync | WireSyncMode::Sync => {
                    out.push(line("sync", v))
                }
            }
        }
        for v in [WireIoEngine::IoUring, WireIoEngine::Psync] {
            match v {
                WireIoEngine::IoUring | WireIoEngine::Psync => out.push(line("ioengine", v)),
            }
        }
        for v in [WireDiskLayout::Slice, WireDiskLayout::Shared] {
            match v {
                WireDiskLayout::Slice | WireDiskLayout::Shared => out.push(line("disk_layout", v)),
            }
        }
        for v in [
            WireSteadyMetric::Iops,
            WireSteadyMetric::Bw,
            WireSteadyMetric::Lat,
        ] {
            match v {
                WireSteadyMetric::Iops | WireSteadyMetric::Bw | WireSteadyMetric::Lat => {
                    out.push(line("steady.metric", v))
                }
            }
        }
        for v in [
            WireSteadyCriterion::Band(1.5),
            WireSteadyCriterion::Slope(1.5),
        ] {
            match v {
                WireSteadyCriterion::Band(_) | WireSteadyCriterion::Slope(_) => {
                    out.push(line("steady.criterion", v))
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::samples::full_spec;
    use super::*;

    #[test]
    fn a_full_spec_converts_both_ways_unchanged() {
        let spec = full_spec();
        let wire = WireSpec::from(&spec);
        let text = serde_json::to_string(&wire).unwrap();
        let back: WireSpec = serde_json::from_str(&text).unwrap();
        assert_eq!(back, wire, "{text}");
        assert_eq!(Spec::from(back), spec, "{text}");
    }

    #[test]
    fn a_default_spec_converts_both_ways_unchanged() {
        let mut spec = crate::workload::test_spec(2, 1, 1);
        spec.groups.push(crate::workload::default_group("other"));
        assert_eq!(Spec::from(WireSpec::from(&spec)), spec);
    }

    /// The JSON is the one protocol 6 sent before the wire had its own types
    /// (the in-memory spec's, then): every field set, and a small spec with
    /// what is left out at its default.
    #[test]
    fn the_json_is_protocol_7s() {
        let full = r#"{"content":{"mixed":{"compress_pct":50,"dedupe_pct":25}},"direct":true,
            "disk_layout":"shared","groups":[{"access":{"align":512,"batch_complete_min":4,
            "bs":[[4096,60],[65536,40]],"iodepth":8,"random_pct":80,"rate":{"iops":500},
            "rate_mode":"open","read_pct":70,"submit_batch":2,"distribution":"zipf:1.2:0.5",
            "think":{"blocks":4,"time":0.00025,"spin":0.00005}},"disks_per_vm":2,"name":"a",
            "vms":3,"workers_per_vm":2},{"access":{"align":512,"batch_complete_min":4,
            "bs":[[4096,60],[65536,40]],"iodepth":8,"random_pct":80,"rate":{"bytes":1048576},
            "rate_mode":"closed","read_pct":70,"submit_batch":2,"distribution":"zipf:1.2:0.5",
            "think":{"blocks":4,"time":0.00025,"spin":0.00005}},"disks_per_vm":2,"name":"b",
            "vms":3,"workers_per_vm":2}],"hipri":true,"interval":0.5,"io_limit":1073741824,
            "io_timeout":5.0,"ioengine":"psync","journal":"/srv/journal","label":"every field",
            "offset":1048576,"ramp":1.5,"reconnect_timeout":3.0,"runtime":20.0,"seed":42,"size":8388608,"sqpoll":true,
            "sqpoll_cpu":1,"steady":{"criterion":{"slope":0.5},"delay":1.0,"metric":"bw",
            "window":4.0},"sync":"dsync","verify":true}"#;
        let small = r#"{"content":"random","direct":false,"disk_layout":"slice","groups":[
            {"access":{"align":null,"bs":[[4096,100]],"iodepth":2,"random_pct":100,"rate":null,
            "rate_mode":"closed","read_pct":75,"distribution":"random","think":null},
            "disks_per_vm":1,"name":"vm","vms":2,
            "workers_per_vm":1}],"interval":1.0,"io_limit":null,"io_timeout":30.0,"journal":null,
            "label":"t","offset":0,"ramp":0.0,"runtime":1.0,"seed":1,"size":1048576,
            "sync":"none","verify":false}"#;
        for (spec, want) in [
            (full_spec(), full),
            (crate::workload::test_spec(2, 1, 1), small),
        ] {
            let wire = serde_json::to_value(WireSpec::from(&spec)).unwrap();
            let want: serde_json::Value = serde_json::from_str(want).unwrap();
            assert_eq!(wire, want);
        }
    }

    #[test]
    fn left_out_fields_read_as_their_defaults() {
        let text = r#"{"label":"x","groups":[{"name":"g","vms":1,"workers_per_vm":1,
            "disks_per_vm":1,"access":{"bs":[[4096,100]],"read_pct":100,"random_pct":0,
            "align":null,"iodepth":1,"rate":null}}],"offset":0,"size":1048576,
            "content":"random","direct":false,"sync":"none","ramp":0.0,"runtime":1.0,
            "interval":1.0,"io_limit":null,"seed":1}"#;
        let spec = Spec::from(serde_json::from_str::<WireSpec>(text).unwrap());
        assert_eq!(spec.io_timeout, crate::workload::DEFAULT_IO_TIMEOUT);
        assert_eq!(spec.disk_layout, DiskLayout::Slice);
        assert_eq!(spec.ioengine, IoEngine::IoUring);
        let a = &spec.groups[0].access;
        assert_eq!((a.batch_complete_min, a.submit_batch), (1, 0));
        assert_eq!(a.rate_mode, RateMode::Closed);
        assert!(!spec.verify && spec.journal.is_none() && spec.steady.is_none());
    }

    #[test]
    fn durations_a_duration_cannot_hold_are_refused() {
        for bad in ["-1.0", "1e400", "3.6e43"] {
            let text = format!(r#"{{"metric":"iops","criterion":{{"band":5.0}},"window":{bad}}}"#);
            assert!(
                serde_json::from_str::<WireSteadyGate>(&text).is_err(),
                "{bad}"
            );
        }
    }
}
