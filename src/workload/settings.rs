//! Settings by key: the values a job file, a catalogue entry or a CLI flag may
//! set (fio's names where fio has one) over the spec's defaults
//! ([`default_spec`], [`default_group`]), and each key's parser. One parser
//! per key, so a key means the same everywhere.

use super::skew::Distribution;
use super::steady::{SteadyCriterion, SteadyGate, SteadyMetric, parse_steady};
use super::units::{parse_duration, parse_pct, parse_size};
use super::validate::SpecError;
use super::{
    BlockSizes, Content, DiskLayout, Group, IoEngine, Job, Rate, RateMode, Spec, SyncMode, Think,
    default_group, default_spec,
};
use std::path::PathBuf;
use std::time::Duration;
use toml::Value;

/// The steady-state gate's default window, in intervals.
pub const DEFAULT_STEADY_INTERVALS: u32 = 5;

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

/// Parse a reconnect timeout: a duration, or "none"/"off"/"0" for none.
pub fn parse_reconnect_timeout(s: &str) -> Result<Duration, SpecError> {
    match s.trim() {
        "none" | "off" => Ok(Duration::ZERO),
        t => parse_duration(t).map_err(|e| SpecError::invalid("reconnect_timeout", s, e)),
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

/// How one key's text becomes its setting's value: `(key, text)`, so an error
/// names the key as given.
type Parser<T> = fn(&str, &str) -> Result<T, SpecError>;

/// A size (`4k`, `1g`) for `key`.
fn size(key: &str, t: &str) -> Result<u64, SpecError> {
    parse_size(t).map_err(|e| SpecError::invalid(key, t, e))
}

/// A duration (`5s`, `1m`) for `key`.
fn dur(key: &str, t: &str) -> Result<Duration, SpecError> {
    parse_duration(t).map_err(|e| SpecError::invalid(key, t, e))
}

/// A percentage 0..=100 for `key`.
fn pct(key: &str, t: &str) -> Result<u8, SpecError> {
    parse_pct(t).map_err(|_| SpecError::invalid(key, t, "0..=100"))
}

/// Put `v` in `slot`, which a key of the same setting (`label` names them
/// all) must not have filled already.
fn put<T>(slot: &mut Option<T>, label: &str, v: T) -> Result<(), SpecError> {
    match slot.replace(v) {
        None => Ok(()),
        Some(_) => Err(SpecError::invalid(
            label,
            "both given",
            "one of them per table",
        )),
    }
}

/// Declares [`Settings`], [`GROUP_KEYS`], [`SPEC_KEYS`], [`Settings::over`]
/// and [`Settings::set`] from one table: a setting is one entry, its doc,
/// field and value type, then each key that sets it with that key's
/// [`Parser`]. A setting with two keys takes one of them per table; the error
/// names both, as `KEY/KEY` in table order. Where a setting lands in the spec
/// is `apply_spec`'s or `apply_group`'s (some settings there depend on others).
macro_rules! settings {
    // One setting's part of `Settings::set`: when `key` is one of its keys,
    // parse and put it, and return.
    (@set $self:ident, $key:ident, $t:ident, $field:ident: $ty:ty = $($k:literal => $parse:expr),+) => {
        let parse: Option<Parser<$ty>> = match $key {
            $($k => Some($parse),)+
            _ => None,
        };
        if let Some(parse) = parse {
            return put(&mut $self.$field, &[$($k),+].join("/"), parse($key, $t)?);
        }
    };
    (
        group { $($(#[$gdoc:meta])* $gfield:ident: $gty:ty = $($gkey:literal => $gparse:expr),+;)* }
        spec { $($(#[$sdoc:meta])* $sfield:ident: $sty:ty = $($skey:literal => $sparse:expr),+;)* }
    ) => {
        /// Keys describing a group's VMs and access pattern.
        pub const GROUP_KEYS: &[&str] = &[$($($gkey,)+)*];
        /// Keys describing a load point as a whole.
        pub const SPEC_KEYS: &[&str] = &[$($($skey,)+)*];

        /// Optional overrides for a spec and its groups, by key. Both job files and
        /// CLI flags fill one of these and apply it, so a key means the same everywhere.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Settings {
            $($(#[$gdoc])* pub $gfield: Option<$gty>,)*
            $($(#[$sdoc])* pub $sfield: Option<$sty>,)*
        }

        impl Settings {
            /// `self` layered over `under`: every field `self` sets wins.
            pub fn over(&self, under: &Settings) -> Settings {
                Settings {
                    $($gfield: self.$gfield.clone().or_else(|| under.$gfield.clone()),)*
                    $($sfield: self.$sfield.clone().or_else(|| under.$sfield.clone()),)*
                }
            }

            /// Set `key` from a TOML value (CLI flags pass strings). Unknown keys are an
            /// error listing the known ones; a key given twice in one place is an error too.
            pub fn set(&mut self, key: &str, v: &Value) -> Result<(), SpecError> {
                let text = value_text(key, v)?;
                let t = text.as_str();
                $(settings!(@set self, key, t, $gfield: $gty = $($gkey => $gparse),+);)*
                $(settings!(@set self, key, t, $sfield: $sty = $($skey => $sparse),+);)*
                let mut all: Vec<&str> = GROUP_KEYS.to_vec();
                all.extend_from_slice(SPEC_KEYS);
                Err(SpecError::unknown("key", key, all.join(", ")))
            }
        }
    };
}

settings! {
    group {
        /// `vms`.
        vms: u32 = "vms" => |k, t| parse_u32(k, t, "1..=100000");
        /// `numjobs`: workers per VM.
        numjobs: u32 = "numjobs" => |k, t| parse_u32(k, t, "1..=4096");
        /// `disks`: disks per VM.
        disks: u32 = "disks" => |k, t| parse_u32(k, t, "1..=1024");
        /// `bs` or `bssplit`.
        bs: BlockSizes = "bs" => |k, t| Ok(BlockSizes::one(size(k, t)?)),
            "bssplit" => |_, t| parse_bssplit(t);
        /// `rw`.
        rw: RwMode = "rw" => |_, t| RwMode::parse(t);
        /// `rwmixread`.
        rwmixread: u8 = "rwmixread" => pct;
        /// `percentage_random`.
        percentage_random: u8 = "percentage_random" => pct;
        /// `random_distribution`: where random offsets fall.
        random_distribution: Distribution =
            "random_distribution" => Distribution::parse;
        /// `iodepth`.
        iodepth: u32 = "iodepth" => |k, t| parse_u32(k, t, "1..=65536");
        /// `iodepth_batch_complete_min`.
        batch_complete_min: u32 =
            "iodepth_batch_complete_min" => |k, t| parse_u32(k, t, "1..=65536");
        /// `iodepth_batch_submit`.
        submit_batch: u32 = "iodepth_batch_submit" => |k, t| match parse_u32(k, t, "1..=65536")? {
            0 => Err(SpecError::invalid(k, t, "1..=65536")),
            v => Ok(v),
        };
        /// `rate` or `rate_iops` (exclusive).
        rate: Rate = "rate" => |k, t| Ok(Rate::Bytes(size(k, t)?)),
            "rate_iops" => |k, t| Ok(Rate::Iops(parse_count(k, t, "I/Os per second > 0")?));
        /// `rate_mode`: closed (fio-like) or open loop.
        rate_mode: RateMode = "rate_mode" => |k, t| {
            RateMode::parse(t).ok_or_else(|| SpecError::invalid(k, t, RateMode::ALLOWED))
        };
        /// `blockalign`.
        blockalign: u64 = "blockalign" => size;
        /// `thinktime`: the pause after each burst (a bare number is
        /// microseconds, as in fio); 0: none.
        thinktime: Duration = "thinktime" => think_time;
        /// `thinktime_blocks`: I/Os per burst (default 1).
        thinktime_blocks: u32 = "thinktime_blocks" => |k, t| parse_u32(k, t, "1..=1000000");
        /// `thinktime_spin`: how much of the pause is spun.
        thinktime_spin: Duration = "thinktime_spin" => think_time;
    }
    spec {
        /// `size`.
        size: u64 = "size" => size;
        /// `offset`.
        offset: u64 = "offset" => size;
        /// `disk_layout`.
        disk_layout: DiskLayout = "disk_layout" => |_, t| parse_disk_layout(t);
        /// `runtime`.
        runtime: Duration = "runtime" => dur;
        /// `ramp_time`.
        ramp_time: Duration = "ramp_time" => dur;
        /// `interval`.
        interval: Duration = "interval" => dur;
        /// `io_size`.
        io_size: u64 = "io_size" => size;
        /// `io_timeout` (zero: no limit).
        io_timeout: Duration = "io_timeout" => |_, t| parse_io_timeout(t);
        /// `reconnect_timeout` (zero: no reconnect).
        reconnect_timeout: Duration = "reconnect_timeout" => |_, t| parse_reconnect_timeout(t);
        /// `direct`.
        direct: bool = "direct" => parse_bool;
        /// `sync`.
        sync: SyncMode = "sync" => |_, t| parse_sync(t);
        /// `sqpoll`.
        sqpoll: bool = "sqpoll" => parse_bool;
        /// `sqpoll_cpu`.
        sqpoll_cpu: u32 = "sqpoll_cpu" => |k, t| {
            t.trim().parse().map_err(|_| SpecError::invalid(k, t, "a CPU number, e.g. 0"))
        };
        /// `hipri`.
        hipri: bool = "hipri" => parse_bool;
        /// `ioengine`: io_uring or psync.
        ioengine: IoEngine = "ioengine" => |k, t| match t.trim() {
            "io_uring" => Ok(IoEngine::IoUring),
            "psync" => Ok(IoEngine::Psync),
            _ => Err(SpecError::invalid(k, t, IoEngine::ALLOWED)),
        };
        /// `content`.
        content: Content = "content" => |_, t| parse_content(t);
        /// `seed`.
        seed: u64 = "seed" => |_, t| parse_seed(t);
        /// `verify`.
        verify: bool = "verify" => parse_bool;
        /// `journal`.
        journal: PathBuf = "journal" => |k, t| match t.trim() {
            "" => Err(SpecError::invalid(k, t, "a file path")),
            _ => Ok(PathBuf::from(t)),
        };
        /// `steadystate`: the figure and criterion of the steady-state gate,
        /// or `none` (no gate, over one a workload it derives from set).
        steadystate: Option<(SteadyMetric, SteadyCriterion)> = "steadystate" => |k, t| match t.trim() {
            "none" => Ok(None),
            _ => parse_steady(k, t).map(Some),
        };
        /// `steadystate_duration`: the gate's window.
        steadystate_duration: Duration = "steadystate_duration" => dur;
        /// `steadystate_ramp_time`: how long into the ramp the gate starts watching.
        steadystate_ramp_time: Duration = "steadystate_ramp_time" => dur;
    }
}

impl Settings {
    /// Apply the per-point settings to `spec` (not its groups). `io_size` without
    /// `runtime` makes the run unbounded in time: it ends when the bytes are done.
    pub fn apply_spec(&self, spec: &mut Spec) {
        set(&mut spec.size, self.size);
        set(&mut spec.offset, self.offset);
        set(&mut spec.disk_layout, self.disk_layout);
        set(&mut spec.ramp, self.ramp_time);
        set(&mut spec.interval, self.interval);
        if let Some(v) = self.io_size {
            spec.io_limit = Some(v);
            if self.runtime.is_none() {
                spec.runtime = Duration::ZERO;
            }
        }
        set(&mut spec.runtime, self.runtime);
        set(&mut spec.io_timeout, self.io_timeout);
        set(&mut spec.reconnect_timeout, self.reconnect_timeout);
        set(&mut spec.direct, self.direct);
        set(&mut spec.sync, self.sync);
        set(&mut spec.sqpoll, self.sqpoll);
        if let Some(cpu) = self.sqpoll_cpu {
            spec.sqpoll_cpu = Some(cpu);
        }
        set(&mut spec.hipri, self.hipri);
        set(&mut spec.ioengine, self.ioengine);
        set(&mut spec.content, self.content);
        set(&mut spec.seed, self.seed);
        set(&mut spec.verify, self.verify);
        if let Some(v) = &self.journal {
            spec.journal = Some(v.clone());
            spec.verify = true;
        }
        if let Some(None) = self.steadystate {
            spec.steady = None;
        }
        if let Some(Some((metric, criterion))) = self.steadystate {
            spec.steady = Some(SteadyGate {
                metric,
                criterion,
                window: self
                    .steadystate_duration
                    .unwrap_or(spec.interval * DEFAULT_STEADY_INTERVALS),
                delay: self.steadystate_ramp_time.unwrap_or_default(),
            });
        }
    }

    /// Apply the group settings to `g`.
    pub fn apply_group(&self, g: &mut Group) {
        set(&mut g.vms, self.vms);
        set(&mut g.workers_per_vm, self.numjobs);
        set(&mut g.disks_per_vm, self.disks);
        let a = &mut g.access;
        if let Some(v) = &self.bs {
            a.bs = v.clone();
        }
        match self.rw {
            Some(rw) => {
                a.read_pct = rw.read_pct(self.rwmixread);
                a.random_pct = rw.random_pct();
            }
            None => set(&mut a.read_pct, self.rwmixread),
        }
        set(&mut a.random_pct, self.percentage_random);
        if let Some(d) = &self.random_distribution {
            a.distribution = d.clone();
        }
        set(&mut a.iodepth, self.iodepth);
        set(&mut a.batch_complete_min, self.batch_complete_min);
        set(&mut a.submit_batch, self.submit_batch);
        if let Some(v) = self.rate {
            a.rate = Some(v);
        }
        set(&mut a.rate_mode, self.rate_mode);
        if let Some(v) = self.blockalign {
            a.align = Some(v);
        }
        match self.thinktime {
            Some(t) if t.is_zero() => a.think = None,
            Some(time) => {
                a.think = Some(Think {
                    blocks: 1,
                    time,
                    spin: Duration::ZERO,
                })
            }
            None => {}
        }
        // As in fio, the burst and the spin only shape a think time.
        if let Some(t) = &mut a.think {
            set(&mut t.blocks, self.thinktime_blocks);
            set(&mut t.spin, self.thinktime_spin);
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

/// A think time: a bare number is microseconds (fio's unit for `thinktime`),
/// else a duration with its unit.
fn think_time(key: &str, t: &str) -> Result<Duration, SpecError> {
    let t = t.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map(Duration::from_micros)
            .map_err(|_| SpecError::invalid(key, t, "microseconds, or a duration such as 2ms"));
    }
    parse_duration(t).map_err(|e| SpecError::invalid(key, t, e))
}

/// Overwrite `dst` with a setting that is present.
fn set<T>(dst: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *dst = v;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the table: a valid value for it.
    const EVERY_KEY: &[(&str, &str)] = &[
        ("vms", "2"),
        ("numjobs", "3"),
        ("disks", "2"),
        ("bs", "8k"),
        ("rw", "randrw"),
        ("rwmixread", "70"),
        ("percentage_random", "40"),
        ("random_distribution", "zipf:1.2:0.5"),
        ("iodepth", "4"),
        ("iodepth_batch_complete_min", "2"),
        ("iodepth_batch_submit", "2"),
        ("rate_iops", "100"),
        ("rate_mode", "open"),
        ("blockalign", "4k"),
        ("thinktime", "500"),
        ("thinktime_blocks", "4"),
        ("thinktime_spin", "100us"),
        ("size", "1g"),
        ("offset", "4k"),
        ("disk_layout", "shared"),
        ("runtime", "5s"),
        ("ramp_time", "1s"),
        ("interval", "1s"),
        ("io_size", "1m"),
        ("io_timeout", "5s"),
        ("reconnect_timeout", "3s"),
        ("direct", "1"),
        ("sync", "dsync"),
        ("sqpoll", "1"),
        ("sqpoll_cpu", "0"),
        ("hipri", "1"),
        ("ioengine", "psync"),
        ("content", "zeros"),
        ("seed", "7"),
        ("verify", "1"),
        ("journal", "/tmp/j"),
        ("steadystate", "iops:5%"),
        ("steadystate_duration", "10s"),
        ("steadystate_ramp_time", "2s"),
    ];

    fn every_setting() -> Settings {
        let mut s = Settings::default();
        for &(k, v) in EVERY_KEY {
            s.set(k, &Value::String(v.into())).unwrap();
        }
        s
    }

    #[test]
    fn every_table_key_is_one_set_knows() {
        for &key in GROUP_KEYS.iter().chain(SPEC_KEYS) {
            // Any error is about the value, not the key.
            if let Err(e) = Settings::default().set(key, &Value::String("?".into())) {
                assert!(!e.field.starts_with("unknown"), "{key}: {e}");
            }
        }
        let e = Settings::default()
            .set("nokey", &Value::String("1".into()))
            .unwrap_err();
        assert!(e.field.starts_with("unknown"), "{e}");
    }

    #[test]
    fn over_takes_every_field_from_the_top_then_from_under() {
        let all = every_setting();
        // Every field is set, so each one below is checked.
        assert!(!format!("{all:?}").contains("None"), "{all:?}");
        assert_eq!(Settings::default().over(&all), all);
        assert_eq!(all.over(&Settings::default()), all);
        let mut top = Settings::default();
        top.set("vms", &Value::Integer(9)).unwrap();
        top.set("journal", &Value::String("/tmp/k".into())).unwrap();
        let want = Settings {
            vms: Some(9),
            journal: Some(PathBuf::from("/tmp/k")),
            ..all.clone()
        };
        assert_eq!(top.over(&all), want);
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
