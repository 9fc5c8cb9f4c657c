//! TOML job files: a user-defined [`Job`].
//!
//! Keys use fio's names where fio has one. Every key is optional; what is not
//! given takes the default shown. Sizes are binary (`4k` = 4096, see
//! [`units`](super::units)); durations take a bare number as seconds.
//!
//! ```toml
//! name = "my-oltp"              # default: the file's stem
//! description = "8k OLTP-like random mix"
//! curve = [10, 50, 100]         # vdbench-style curve: each load point runs unthrottled to
//!                               # find its max IOPS, then once per percentage of it with an
//!                               # open-loop rate; true = 10, 50, 70, 80, 90, 100; default none
//!
//! # Per-point settings
//! size = "1GiB"                 # region used on each disk (and created file size); default 64 MiB
//! offset = "0"                  # start of the region on each disk; default 0
//! disk_layout = "slice"         # single target (file, device, LUN, export): "slice" gives
//!                               # disk k its own [offset + k*size, +size); "shared": every
//!                               # disk uses [offset, offset + size); default "slice"
//! runtime = "60s"               # measured time; default 10 s; 0 = until io_size is done
//! ramp_time = "10s"             # warm-up excluded from the summary; default 0
//! interval = "1s"               # statistics interval, 10 ms ..= 1 h; default 1 s
//! io_size = "256MiB"            # stop each worker after this many bytes; default unset
//!                               # (with io_size and no runtime, the time is unbounded)
//! io_timeout = "30s"            # an I/O in flight longer ends the run with an error naming
//!                               # it; default 30 s; 0 or "none" = no limit
//! direct = true                 # O_DIRECT; default false (also 0 / 1)
//! sync = "none"                 # "none" | "dsync" | "sync"; true = "sync", false = "none"
//! content = "random"            # "random" | "zeros" | { compress = 50, dedupe = 20 }
//! seed = 1                      # default 0x57021ab
//! verify = true                 # self-describing blocks, every read checked (docs/verify.md); default false
//! journal = "/var/tmp/j.jrnl"   # durability journal of acknowledged writes (implies verify); default none
//!
//! # Group settings: written at top level they describe the single group, or
//! # act as defaults for every [[group]] below.
//! vms = 1                       # identical VMs (worker groups); default 1
//! numjobs = 4                   # workers per VM; default 1
//! disks = 2                     # disks (files / LUNs) per VM; default 1
//! bs = "8k"                     # or bssplit = "4k/50:8k/50" (fio syntax); default 4k
//! rw = "randrw"                 # read|write|randread|randwrite|rw|readwrite|randrw; default randread
//! rwmixread = 60                # read share of rw / randrw; default 50
//! percentage_random = 100       # overrides the random share implied by rw
//! iodepth = 32                  # outstanding I/Os per worker; default 1
//! rate_iops = 5000              # per-worker cap; or rate = "10MiB" (bytes per second)
//! rate_mode = "closed"          # "closed" (fio-like: a stall delays the schedule, latency
//!                               # from submission) | "open" (fixed schedule, latency from
//!                               # each I/O's scheduled time); default "closed"
//! blockalign = "4k"             # offset alignment; default the smallest block size
//!
//! [[group]]                     # optional: several groups run together
//! name = "readers"              # default "group1", "group2", ...
//! vms = 2
//! rw = "read"
//!
//! [[group]]
//! name = "writers"
//! rw = "write"
//!
//! [sweep]                       # load points: the cartesian product, first key outermost
//! vms = [32, 64, 96, 128]       # allowed: vms, numjobs, iodepth, bs, rw, rwmixread, rate_iops,
//!                               # rate_mode
//! ```
//!
//! fio's `rw` semantics: `read` is 100% read, 0% random; `write` 0/0;
//! `randread` 100/100; `randwrite` 0/100; `rw`/`readwrite` a sequential mix with
//! `rwmixread`% reads (default 50); `randrw` the random mix. `percentage_random`
//! overrides the random share; `rwmixread` without `rw` sets the read share of
//! whatever pattern is in place.
//!
//! Settings layer: defaults, then top-level keys, then the group's keys, then the
//! sweep point's. Sweep points are labelled by their values ("vms=32",
//! "bs=4k rw=write"); a job without a sweep has one point labelled with its name.
//!
//! The same keys drive the fio-named CLI flags ([`flags`](super::flags)) through
//! [`Settings`], so both accept exactly the same values.

use super::units::{parse_duration, parse_pct, parse_size};
use super::validate::{SpecError, validate_job};
use super::{Access, BlockSizes, Content, DiskLayout, Group, Job, Rate, RateMode, Spec, SyncMode};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use toml::Value;

/// Default seed of every pseudo-random choice ("storlab" in leetspeak, roughly).
pub const DEFAULT_SEED: u64 = 0x0570_21ab;
/// Default region size per disk.
pub const DEFAULT_SIZE: u64 = 64 << 20;
/// Default measured time.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(10);

/// Keys describing a group's VMs and access pattern.
pub const GROUP_KEYS: &[&str] = &[
    "vms",
    "numjobs",
    "disks",
    "bs",
    "bssplit",
    "rw",
    "rwmixread",
    "percentage_random",
    "iodepth",
    "rate_iops",
    "rate",
    "rate_mode",
    "blockalign",
];
/// Keys describing a load point as a whole.
pub const SPEC_KEYS: &[&str] = &[
    "size",
    "offset",
    "disk_layout",
    "runtime",
    "ramp_time",
    "interval",
    "io_size",
    "io_timeout",
    "direct",
    "sync",
    "content",
    "seed",
    "verify",
    "journal",
];
/// Keys that may be swept over in `[sweep]`.
pub const SWEEP_KEYS: &[&str] = &[
    "vms",
    "numjobs",
    "iodepth",
    "bs",
    "rw",
    "rwmixread",
    "rate_iops",
    "rate_mode",
];
/// Top-level keys other than the group and spec keys.
const FILE_KEYS: &[&str] = &["name", "description", "group", "sweep", "curve"];

/// fio's `rw` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mix of reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mix of reads and writes.
    RandRw,
}

impl RwMode {
    /// Every accepted spelling.
    pub const ALLOWED: &'static str = "read, write, randread, randwrite, rw, readwrite, randrw";

    /// Parse fio's spelling.
    pub fn parse(s: &str) -> Result<Self, SpecError> {
        Ok(match s.trim() {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            _ => return Err(SpecError::invalid("rw", s, Self::ALLOWED)),
        })
    }

    /// Read share, with `mix` (rwmixread, default 50) for the mixed modes.
    pub fn read_pct(self, mix: Option<u8>) -> u8 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::ReadWrite | RwMode::RandRw => mix.unwrap_or(50),
        }
    }

    /// Random share.
    pub fn random_pct(self) -> u8 {
        match self {
            RwMode::Read | RwMode::Write | RwMode::ReadWrite => 0,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw => 100,
        }
    }
}

const BSSPLIT_ALLOWED: &str = "SIZE/WEIGHT entries joined by ':', e.g. 4k/50:8k/30:64k/20 \
     (an entry without /WEIGHT shares what is left of 100)";

/// Parse fio's `bssplit` ("4k/50:8k/50"). Entries without a weight split the
/// remainder of 100 evenly, as in fio.
pub fn parse_bssplit(s: &str) -> Result<BlockSizes, SpecError> {
    let bad = || SpecError::invalid("bssplit", s, BSSPLIT_ALLOWED);
    let mut out = Vec::new();
    let mut unweighted = Vec::new();
    let mut total = 0u64;
    for entry in s.split(':').map(str::trim) {
        if entry.is_empty() {
            return Err(bad());
        }
        let (size, weight) = match entry.split_once('/') {
            Some((sz, w)) if !w.trim().is_empty() => (sz, Some(parse_pct(w).map_err(|_| bad())?)),
            Some((sz, _)) => (sz, None),
            None => (entry, None),
        };
        let size = parse_size(size).map_err(|e| SpecError::invalid("bssplit", s, e))?;
        match weight {
            Some(w) => {
                total += w as u64;
                out.push((size, w as u32));
            }
            None => {
                unweighted.push(out.len());
                out.push((size, 0));
            }
        }
    }
    if !unweighted.is_empty() {
        let share = 100u64.saturating_sub(total) / unweighted.len() as u64;
        if share == 0 {
            return Err(bad());
        }
        for i in unweighted {
            out[i].1 = share as u32;
        }
    }
    Ok(BlockSizes(out))
}

const CONTENT_ALLOWED: &str = "random, zeros, or compress=N,dedupe=M with N, M percentages \
     (in a job file also { compress = N, dedupe = M })";

/// Parse a content description: "random", "zeros", or "compress=50,dedupe=20"
/// (either part may be left out and is then 0).
pub fn parse_content(s: &str) -> Result<Content, SpecError> {
    let bad = || SpecError::invalid("content", s, CONTENT_ALLOWED);
    match s.trim() {
        "random" => return Ok(Content::Random),
        "zeros" | "zero" => return Ok(Content::Zeros),
        _ => {}
    }
    let (mut compress_pct, mut dedupe_pct) = (None, None);
    for part in s.split(',').map(str::trim) {
        let (k, v) = part.split_once('=').ok_or_else(bad)?;
        let v = parse_pct(v).map_err(|_| bad())?;
        let slot = match k.trim() {
            "compress" => &mut compress_pct,
            "dedupe" => &mut dedupe_pct,
            _ => return Err(bad()),
        };
        if slot.replace(v).is_some() {
            return Err(bad());
        }
    }
    Ok(Content::Mixed {
        compress_pct: compress_pct.unwrap_or(0),
        dedupe_pct: dedupe_pct.unwrap_or(0),
    })
}

/// Parse a sync mode: "none"/"0"/"false", "dsync", "sync"/"1"/"true".
pub fn parse_sync(s: &str) -> Result<SyncMode, SpecError> {
    match s.trim() {
        "none" | "0" | "false" => Ok(SyncMode::None),
        "dsync" => Ok(SyncMode::Dsync),
        "sync" | "1" | "true" => Ok(SyncMode::Sync),
        _ => Err(SpecError::invalid(
            "sync",
            s,
            "none, dsync, sync, 0 (none), 1 (sync), true, false",
        )),
    }
}

/// Parse a disk layout: "slice" or "shared".
pub fn parse_disk_layout(s: &str) -> Result<DiskLayout, SpecError> {
    match s.trim() {
        "slice" => Ok(DiskLayout::Slice),
        "shared" => Ok(DiskLayout::Shared),
        _ => Err(SpecError::invalid("disk_layout", s, DiskLayout::ALLOWED)),
    }
}

/// Parse an I/O timeout: a duration, or "none"/"off"/"0" for no limit (zero).
pub fn parse_io_timeout(s: &str) -> Result<Duration, SpecError> {
    match s.trim() {
        "none" | "off" => Ok(Duration::ZERO),
        t => parse_duration(t).map_err(|e| SpecError::invalid("io_timeout", s, e)),
    }
}

fn parse_bool(key: &str, s: &str) -> Result<bool, SpecError> {
    match s.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(SpecError::invalid(key, s, "0, 1, true, false")),
    }
}

fn parse_count(key: &str, s: &str, allowed: &str) -> Result<u64, SpecError> {
    s.trim()
        .replace('_', "")
        .parse::<u64>()
        .map_err(|_| SpecError::invalid(key, s, allowed))
}

fn parse_u32(key: &str, s: &str, allowed: &str) -> Result<u32, SpecError> {
    let v = parse_count(key, s, allowed)?;
    u32::try_from(v).map_err(|_| SpecError::invalid(key, s, allowed))
}

fn parse_seed(s: &str) -> Result<u64, SpecError> {
    let t = s.trim().replace('_', "");
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    v.map_err(|_| SpecError::invalid("seed", s, "an integer 0 ..= 2^64-1 (decimal or 0x hex)"))
}

/// A value as text, so TOML values and CLI strings go through the same parsers.
/// Tables are only meaningful for `content` and are flattened to its text form.
fn value_text(key: &str, v: &Value) -> Result<String, SpecError> {
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Table(t) if key == "content" => t
            .iter()
            .map(|(k, v)| Ok(format!("{k}={}", value_text(key, v)?)))
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        other => {
            return Err(SpecError::invalid(
                key,
                other.to_string(),
                "a single value (string, number or boolean)",
            ));
        }
    })
}

/// Optional overrides for a spec and its groups, by key. Both job files and
/// CLI flags fill one of these and apply it, so a key means the same everywhere.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// `vms`.
    pub vms: Option<u32>,
    /// `numjobs`: workers per VM.
    pub numjobs: Option<u32>,
    /// `disks`: disks per VM.
    pub disks: Option<u32>,
    /// `bs` or `bssplit`.
    pub bs: Option<BlockSizes>,
    /// `rw`.
    pub rw: Option<RwMode>,
    /// `rwmixread`.
    pub rwmixread: Option<u8>,
    /// `percentage_random`.
    pub percentage_random: Option<u8>,
    /// `iodepth`.
    pub iodepth: Option<u32>,
    /// `rate_iops` or `rate` (exclusive).
    pub rate: Option<Rate>,
    /// `rate_mode`: closed (fio-like) or open loop.
    pub rate_mode: Option<RateMode>,
    /// `blockalign`.
    pub blockalign: Option<u64>,
    /// `size`.
    pub size: Option<u64>,
    /// `offset`.
    pub offset: Option<u64>,
    /// `disk_layout`.
    pub disk_layout: Option<DiskLayout>,
    /// `runtime`.
    pub runtime: Option<Duration>,
    /// `ramp_time`.
    pub ramp_time: Option<Duration>,
    /// `interval`.
    pub interval: Option<Duration>,
    /// `io_size`.
    pub io_size: Option<u64>,
    /// `io_timeout` (zero: no limit).
    pub io_timeout: Option<Duration>,
    /// `direct`.
    pub direct: Option<bool>,
    /// `sync`.
    pub sync: Option<SyncMode>,
    /// `content`.
    pub content: Option<Content>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `verify`.
    pub verify: Option<bool>,
    /// `journal`.
    pub journal: Option<std::path::PathBuf>,
}

impl Settings {
    /// Set `key` from a TOML value (CLI flags pass strings). Unknown keys are an
    /// error listing the known ones; a key given twice in one place is an error too.
    pub fn set(&mut self, key: &str, v: &Value) -> Result<(), SpecError> {
        let text = value_text(key, v)?;
        let t = text.as_str();
        let size = |t: &str| parse_size(t).map_err(|e| SpecError::invalid(key, t, e));
        let dur = |t: &str| parse_duration(t).map_err(|e| SpecError::invalid(key, t, e));
        let pct = |t: &str| parse_pct(t).map_err(|_| SpecError::invalid(key, t, "0..=100"));
        fn put<T>(slot: &mut Option<T>, key: &str, v: T) -> Result<(), SpecError> {
            match slot.replace(v) {
                None => Ok(()),
                Some(_) => Err(SpecError::invalid(
                    key,
                    "both given",
                    "one of them per table",
                )),
            }
        }
        match key {
            "vms" => put(&mut self.vms, key, parse_u32(key, t, "1..=100000")?),
            "numjobs" => put(&mut self.numjobs, key, parse_u32(key, t, "1..=4096")?),
            "disks" => put(&mut self.disks, key, parse_u32(key, t, "1..=1024")?),
            "bs" => put(&mut self.bs, "bs/bssplit", BlockSizes::one(size(t)?)),
            "bssplit" => put(&mut self.bs, "bs/bssplit", parse_bssplit(t)?),
            "rw" => put(&mut self.rw, key, RwMode::parse(t)?),
            "rwmixread" => put(&mut self.rwmixread, key, pct(t)?),
            "percentage_random" => put(&mut self.percentage_random, key, pct(t)?),
            "iodepth" => put(&mut self.iodepth, key, parse_u32(key, t, "1..=65536")?),
            "rate_iops" => put(
                &mut self.rate,
                "rate/rate_iops",
                Rate::Iops(parse_count(key, t, "I/Os per second > 0")?),
            ),
            "rate" => put(&mut self.rate, "rate/rate_iops", Rate::Bytes(size(t)?)),
            "rate_mode" => put(
                &mut self.rate_mode,
                key,
                RateMode::parse(t).ok_or_else(|| SpecError::invalid(key, t, RateMode::ALLOWED))?,
            ),
            "blockalign" => put(&mut self.blockalign, key, size(t)?),
            "size" => put(&mut self.size, key, size(t)?),
            "offset" => put(&mut self.offset, key, size(t)?),
            "disk_layout" => put(&mut self.disk_layout, key, parse_disk_layout(t)?),
            "runtime" => put(&mut self.runtime, key, dur(t)?),
            "ramp_time" => put(&mut self.ramp_time, key, dur(t)?),
            "interval" => put(&mut self.interval, key, dur(t)?),
            "io_size" => put(&mut self.io_size, key, size(t)?),
            "io_timeout" => put(&mut self.io_timeout, key, parse_io_timeout(t)?),
            "direct" => put(&mut self.direct, key, parse_bool(key, t)?),
            "sync" => put(&mut self.sync, key, parse_sync(t)?),
            "content" => put(&mut self.content, key, parse_content(t)?),
            "seed" => put(&mut self.seed, key, parse_seed(t)?),
            "verify" => put(&mut self.verify, key, parse_bool(key, t)?),
            "journal" if t.trim().is_empty() => Err(SpecError::invalid(key, t, "a file path")),
            "journal" => put(&mut self.journal, key, std::path::PathBuf::from(t)),
            _ => {
                let mut all: Vec<&str> = GROUP_KEYS.to_vec();
                all.extend_from_slice(SPEC_KEYS);
                Err(SpecError::unknown("key", key, all.join(", ")))
            }
        }
    }

    /// `self` layered over `under`: every field `self` sets wins.
    pub fn over(&self, under: &Settings) -> Settings {
        macro_rules! pick {
            ($($f:ident),*) => { Settings { $($f: self.$f.clone().or_else(|| under.$f.clone()),)* } };
        }
        pick!(
            vms,
            numjobs,
            disks,
            bs,
            rw,
            rwmixread,
            percentage_random,
            iodepth,
            rate,
            rate_mode,
            blockalign,
            size,
            offset,
            disk_layout,
            runtime,
            ramp_time,
            interval,
            io_size,
            io_timeout,
            direct,
            sync,
            content,
            seed,
            verify,
            journal
        )
    }

    /// Apply the per-point settings to `spec` (not its groups). `io_size` without
    /// `runtime` makes the run unbounded in time: it ends when the bytes are done.
    pub fn apply_spec(&self, spec: &mut Spec) {
        if let Some(v) = self.size {
            spec.size = v;
        }
        if let Some(v) = self.offset {
            spec.offset = v;
        }
        if let Some(v) = self.disk_layout {
            spec.disk_layout = v;
        }
        if let Some(v) = self.ramp_time {
            spec.ramp = v;
        }
        if let Some(v) = self.interval {
            spec.interval = v;
        }
        if let Some(v) = self.io_size {
            spec.io_limit = Some(v);
            if self.runtime.is_none() {
                spec.runtime = Duration::ZERO;
            }
        }
        if let Some(v) = self.runtime {
            spec.runtime = v;
        }
        if let Some(v) = self.io_timeout {
            spec.io_timeout = v;
        }
        if let Some(v) = self.direct {
            spec.direct = v;
        }
        if let Some(v) = self.sync {
            spec.sync = v;
        }
        if let Some(v) = self.content {
            spec.content = v;
        }
        if let Some(v) = self.seed {
            spec.seed = v;
        }
        if let Some(v) = self.verify {
            spec.verify = v;
        }
        if let Some(v) = &self.journal {
            spec.journal = Some(v.clone());
            spec.verify = true;
        }
    }

    /// Apply the group settings to `g`.
    pub fn apply_group(&self, g: &mut Group) {
        if let Some(v) = self.vms {
            g.vms = v;
        }
        if let Some(v) = self.numjobs {
            g.workers_per_vm = v;
        }
        if let Some(v) = self.disks {
            g.disks_per_vm = v;
        }
        let a = &mut g.access;
        if let Some(v) = &self.bs {
            a.bs = v.clone();
        }
        match self.rw {
            Some(rw) => {
                a.read_pct = rw.read_pct(self.rwmixread);
                a.random_pct = rw.random_pct();
            }
            None => {
                if let Some(v) = self.rwmixread {
                    a.read_pct = v;
                }
            }
        }
        if let Some(v) = self.percentage_random {
            a.random_pct = v;
        }
        if let Some(v) = self.iodepth {
            a.iodepth = v;
        }
        if let Some(v) = self.rate {
            a.rate = Some(v);
        }
        if let Some(v) = self.rate_mode {
            a.rate_mode = v;
        }
        if let Some(v) = self.blockalign {
            a.align = Some(v);
        }
    }

    /// Apply everything to `spec` and every one of its groups.
    pub fn apply(&self, spec: &mut Spec) {
        self.apply_spec(spec);
        for g in &mut spec.groups {
            self.apply_group(g);
        }
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
            align: None,
            iodepth: 1,
            rate: None,
            rate_mode: RateMode::Closed,
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
        ramp: Duration::ZERO,
        runtime: DEFAULT_RUNTIME,
        interval: Duration::from_secs(1),
        io_limit: None,
        seed: DEFAULT_SEED,
        io_timeout: crate::workload::DEFAULT_IO_TIMEOUT,
        verify: false,
        journal: None,
    }
}

/// A one-point job named `name` from default values overlaid with `settings`;
/// the point is labelled with the name. Not validated.
pub fn job_from_settings(name: &str, settings: &Settings) -> Job {
    let mut spec = default_spec(name);
    spec.groups.push(default_group("vm"));
    settings.apply(&mut spec);
    Job {
        name: name.to_string(),
        description: String::new(),
        profile: None,
        points: vec![spec],
        provenance: Vec::new(),
        curve: None,
    }
}

/// Load and validate a job file.
pub fn load(path: &Path) -> Result<Job, SpecError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        SpecError::invalid(
            "job file",
            format!("{origin} ({e})"),
            "a readable TOML file in the storlab job format",
        )
    })?;
    parse(&text, &origin)
}

/// Parse and validate job-file text; `origin` names the file in errors and
/// its stem is the default job name.
pub fn parse(text: &str, origin: &str) -> Result<Job, SpecError> {
    let ctx = format!("job file {origin}");
    parse_inner(text, origin).map_err(|e| e.context(ctx.clone()))
}

fn syntax_error(text: &str, e: &toml::de::Error) -> SpecError {
    let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    let mut err = SpecError::invalid(
        "TOML syntax",
        msg,
        "TOML (toml.io) in the storlab job format",
    );
    if let Some(span) = e.span() {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        err = err.context(format!("line {line}"));
    }
    err
}

/// Settings from a table, with `extra` keys allowed (and skipped) beside `keys`.
fn settings_from(
    table: &toml::Table,
    keys: &[&[&str]],
    extra: &[&str],
) -> Result<Settings, SpecError> {
    let mut s = Settings::default();
    for (k, v) in table {
        if extra.contains(&k.as_str()) {
            continue;
        }
        if !keys.iter().any(|ks| ks.contains(&k.as_str())) {
            let mut allowed: Vec<&str> = extra.to_vec();
            for ks in keys {
                allowed.extend_from_slice(ks);
            }
            return Err(SpecError::unknown("key", k.as_str(), allowed.join(", ")));
        }
        s.set(k, v)?;
    }
    Ok(s)
}

fn string_key(table: &toml::Table, key: &str) -> Result<Option<String>, SpecError> {
    match table.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(SpecError::invalid(key, v.to_string(), "a string")),
    }
}

/// The `[sweep]` keys in file order: the table itself is sorted, so the order
/// comes from a second pass that records where each key's value sits.
fn sweep_order(text: &str, sweep: &toml::Table) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Doc {
        sweep: BTreeMap<String, toml::Spanned<Value>>,
    }
    let mut keys: Vec<String> = sweep.keys().cloned().collect();
    if let Ok(doc) = toml::from_str::<Doc>(text) {
        keys.sort_by_key(|k| doc.sweep.get(k).map_or(usize::MAX, |v| v.span().start));
    }
    keys
}

fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_inner(text: &str, origin: &str) -> Result<Job, SpecError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
    let stem = Path::new(origin)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = string_key(&table, "name")?.unwrap_or(stem);
    let description = string_key(&table, "description")?.unwrap_or_default();
    let top = settings_from(&table, &[GROUP_KEYS, SPEC_KEYS], FILE_KEYS)?;

    let groups: Vec<(String, Settings)> = match table.get("group") {
        None => vec![("vm".to_string(), Settings::default())],
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let ctx = format!("[[group]] {}", i + 1);
                let t = item.as_table().ok_or_else(|| {
                    SpecError::invalid("group", item.to_string(), "a table ([[group]])")
                        .context(&ctx)
                })?;
                let name = string_key(t, "name")
                    .map_err(|e| e.context(&ctx))?
                    .unwrap_or(format!("group{}", i + 1));
                let s = settings_from(t, &[GROUP_KEYS], &["name"]).map_err(|e| e.context(&ctx))?;
                Ok((name, s))
            })
            .collect::<Result<_, SpecError>>()?,
        Some(v) => {
            return Err(SpecError::invalid(
                "group",
                v.to_string(),
                "one or more [[group]] tables",
            ));
        }
    };

    // Each sweep point: a label and its settings.
    let mut points: Vec<(String, Settings)> = vec![(String::new(), Settings::default())];
    match table.get("sweep") {
        None => {}
        Some(Value::Table(sweep)) => {
            for key in sweep_order(text, sweep) {
                let values = match &sweep[&key] {
                    Value::Array(vs) if !vs.is_empty() => vs,
                    v => {
                        return Err(SpecError::invalid(
                            key.as_str(),
                            v.to_string(),
                            "a non-empty array of values",
                        )
                        .context("[sweep]"));
                    }
                };
                if !SWEEP_KEYS.contains(&key.as_str()) {
                    return Err(
                        SpecError::unknown("key", key.as_str(), SWEEP_KEYS.join(", "))
                            .context("[sweep]"),
                    );
                }
                let mut next = Vec::with_capacity(points.len() * values.len());
                for (label, s) in &points {
                    for v in values {
                        let mut s = s.clone();
                        s.set(&key, v).map_err(|e| e.context("[sweep]"))?;
                        let item = format!("{key}={}", label_text(v));
                        let label = if label.is_empty() {
                            item
                        } else {
                            format!("{label} {item}")
                        };
                        next.push((label, s));
                    }
                }
                points = next;
            }
        }
        Some(v) => {
            return Err(SpecError::invalid(
                "sweep",
                v.to_string(),
                "a [sweep] table",
            ));
        }
    }

    let specs = points
        .iter()
        .map(|(label, point)| {
            let mut spec = default_spec(if label.is_empty() { &name } else { label });
            top.apply_spec(&mut spec);
            for (gname, gs) in &groups {
                let mut g = default_group(gname);
                point.over(&gs.over(&top)).apply_group(&mut g);
                spec.groups.push(g);
            }
            spec
        })
        .collect();
    let job = Job {
        name,
        description,
        profile: None,
        points: specs,
        provenance: Vec::new(),
        curve: match table.get("curve") {
            Some(v) => super::curve::from_toml(v)?,
            None => None,
        },
    };
    validate_job(&job)?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, "jobs/x.toml").unwrap_err().to_string()
    }

    #[test]
    fn examples_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let job = load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(!job.points.is_empty());
                n += 1;
            }
        }
        assert!(n >= 2);
    }

    #[test]
    fn defaults() {
        let job = parse("", "dir/empty.toml").unwrap();
        assert_eq!(job.name, "empty");
        assert_eq!(job.points.len(), 1);
        let p = &job.points[0];
        assert_eq!(p.label, "empty");
        assert_eq!(p.size, 64 << 20);
        assert_eq!(p.runtime, Duration::from_secs(10));
        assert_eq!(p.seed, DEFAULT_SEED);
        assert_eq!(p.groups, vec![default_group("vm")]);
        assert_eq!(p.groups[0].access.read_pct, 100);
        assert_eq!(p.groups[0].access.random_pct, 100);
    }

    #[test]
    fn single_group_at_top_level() {
        let job = parse(
            r#"
            name = "oltp"
            size = "1GiB"
            runtime = "60s"
            ramp_time = 10
            direct = true
            sync = "dsync"
            content = { compress = 50, dedupe = 20 }
            vms = 2
            numjobs = 4
            disks = 2
            bssplit = "4k/50:8k/50"
            rw = "randrw"
            rwmixread = 60
            iodepth = 32
            rate = "10MiB"
            "#,
            "x.toml",
        )
        .unwrap();
        let p = &job.points[0];
        assert_eq!((p.size, p.direct, p.sync), (1 << 30, true, SyncMode::Dsync));
        assert_eq!(
            (p.ramp, p.runtime),
            (Duration::from_secs(10), Duration::from_secs(60))
        );
        assert_eq!(
            p.content,
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 20
            }
        );
        let g = &p.groups[0];
        assert_eq!((g.vms, g.workers_per_vm, g.disks_per_vm), (2, 4, 2));
        assert_eq!(g.access.bs, BlockSizes(vec![(4096, 50), (8192, 50)]));
        assert_eq!(
            (g.access.read_pct, g.access.random_pct, g.access.iodepth),
            (60, 100, 32)
        );
        assert_eq!(g.access.rate, Some(Rate::Bytes(10 << 20)));
    }

    #[test]
    fn rw_semantics() {
        let g = |extra: &str| {
            parse(extra, "x.toml").unwrap().points[0].groups[0]
                .access
                .clone()
        };
        let rr = |a: Access| (a.read_pct, a.random_pct);
        assert_eq!(rr(g("rw = \"read\"")), (100, 0));
        assert_eq!(rr(g("rw = \"write\"")), (0, 0));
        assert_eq!(rr(g("rw = \"randread\"")), (100, 100));
        assert_eq!(rr(g("rw = \"randwrite\"")), (0, 100));
        assert_eq!(rr(g("rw = \"rw\"")), (50, 0));
        assert_eq!(rr(g("rw = \"readwrite\"\nrwmixread = 70")), (70, 0));
        assert_eq!(rr(g("rw = \"randrw\"")), (50, 100));
        assert_eq!(rr(g("rw = \"randrw\"\npercentage_random = 30")), (50, 30));
        assert_eq!(rr(g("rw = \"write\"\nrwmixread = 70")), (0, 0));
    }

    #[test]
    fn groups_and_sweep() {
        let job = parse(
            r#"
            size = "8MiB"
            bs = "32k"
            [[group]]
            name = "readers"
            vms = 2
            rw = "read"
            [[group]]
            rw = "write"
            [sweep]
            vms = [1, 2]
            bs = ["4k", 8192]
            "#,
            "x.toml",
        )
        .unwrap();
        let labels: Vec<_> = job.points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "vms=1 bs=4k",
                "vms=1 bs=8192",
                "vms=2 bs=4k",
                "vms=2 bs=8192"
            ]
        );
        let p = &job.points[1];
        assert_eq!(p.groups.len(), 2);
        assert_eq!(p.groups[0].name, "readers");
        assert_eq!(p.groups[1].name, "group2");
        assert_eq!(p.groups[0].vms, 1);
        assert_eq!(p.groups[1].access.bs, BlockSizes::one(8192));
        assert_eq!(p.groups[1].access.read_pct, 0);
        // Sweep order follows the file, not the alphabet.
        let job = parse(
            "[sweep]\nrw = [\"read\", \"write\"]\nbs = [\"4k\", \"8k\"]\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(job.points[1].label, "rw=read bs=8k");
    }

    #[test]
    fn io_size_makes_runtime_unbounded() {
        let p = &parse("io_size = \"256MiB\"", "x.toml").unwrap().points[0];
        assert_eq!((p.io_limit, p.runtime), (Some(256 << 20), Duration::ZERO));
        let p = &parse("io_size = \"256MiB\"\nruntime = 5", "x.toml")
            .unwrap()
            .points[0];
        assert_eq!(p.runtime, Duration::from_secs(5));
    }

    #[test]
    fn errors_name_file_and_key() {
        let e = err("bsx = 4");
        assert!(
            e.starts_with("job file jobs/x.toml: unknown key \"bsx\" (allowed: name, description"),
            "{e}"
        );
        assert!(e.contains("bssplit"), "{e}");
        let e = err("[[group]]\nname = \"a\"\nsize = \"1m\"");
        assert!(
            e.starts_with(
                "job file jobs/x.toml, [[group]] 1: unknown key \"size\" (allowed: name, vms"
            ),
            "{e}"
        );
        let e = err("[sweep]\nsize = [\"1m\"]");
        assert!(
            e.contains("[sweep]: unknown key \"size\" (allowed: vms, numjobs"),
            "{e}"
        );
        let e = err("[sweep]\nvms = 3");
        assert!(
            e.contains("invalid vms = 3 (allowed: a non-empty array"),
            "{e}"
        );
        let e = err("rwmixread = 150");
        assert_eq!(
            e,
            "job file jobs/x.toml: invalid rwmixread = 150 (allowed: 0..=100)"
        );
        let e = err("direct = true\nbs = 1000");
        assert!(
            e.contains("invalid bs = 1000 (allowed: 512 B ..= 64 MiB"),
            "{e}"
        );
        let e = err("rw = \"randomread\"");
        assert!(
            e.contains("invalid rw = randomread (allowed: read, write"),
            "{e}"
        );
        let e = err("size = \"4q\"");
        assert!(
            e.contains("invalid size = 4q") && e.contains("unknown suffix"),
            "{e}"
        );
        let e = err("rate = \"1m\"\nrate_iops = 5");
        assert!(e.contains("rate/rate_iops"), "{e}");
        let e = err("content = { compress = 50, foo = 1 }");
        assert!(e.contains("invalid content"), "{e}");
        let e = err("[sweep]\nvms = [32, 0]");
        assert!(e.contains("load point \"vms=0\": invalid vms = 0"), "{e}");
        let e = err("name = 3");
        assert!(e.contains("invalid name = 3 (allowed: a string)"), "{e}");
    }

    #[test]
    fn syntax_error_names_line() {
        let e = err("size = \"1m\"\n\nbs = \n");
        assert!(
            e.starts_with("job file jobs/x.toml, line 3: invalid TOML syntax"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn missing_file() {
        let e = load(Path::new("/nonexistent/j.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/j.toml"), "{e}");
    }

    #[test]
    fn shared_parsers() {
        assert_eq!(
            parse_bssplit("4k/10:64k/50:32k/40").unwrap().0,
            vec![(4096, 10), (65536, 50), (32768, 40)]
        );
        assert_eq!(
            parse_bssplit("4k/50:8k:16k").unwrap().0,
            vec![(4096, 50), (8192, 25), (16384, 25)]
        );
        assert_eq!(parse_bssplit("8k").unwrap().0, vec![(8192, 100)]);
        assert!(parse_bssplit("4k/100:8k").is_err());
        assert!(parse_bssplit("4k/x").is_err());
        assert!(parse_bssplit("").is_err());
        assert_eq!(parse_content("zeros").unwrap(), Content::Zeros);
        assert_eq!(
            parse_content("compress=50").unwrap(),
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 0
            }
        );
        assert_eq!(
            parse_content("compress=50,dedupe=20").unwrap(),
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 20
            }
        );
        assert!(parse_content("compress=150").is_err());
        assert!(parse_content("fancy").is_err());
        assert_eq!(parse_sync("1").unwrap(), SyncMode::Sync);
        assert_eq!(parse_sync("dsync").unwrap(), SyncMode::Dsync);
        assert!(parse_sync("2").is_err());
        assert_eq!(parse_seed("0x10").unwrap(), 16);
    }
}
