//! fio-named command-line flags: define a job on the command line, or override
//! fields of a built-in workload or job file.
//!
//! Every flag takes the same values as the job-file key of the same name (they
//! share [`Settings`]), so `--bs 8k --rw randrw --rwmixread 60` means what it
//! means in a job file and in fio.

use super::Job;
use super::settings::{Settings, job_from_settings};
use super::validate::{SpecError, validate_job};
use toml::Value;

/// Workload flags; each overrides one setting of every load point and group.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Flags {
    /// Block size, e.g. 4k, 64KiB (binary units)
    #[arg(long = "bs", value_name = "SIZE")]
    pub bs: Option<String>,
    /// Block size mix, fio syntax: 4k/50:8k/30:64k/20
    #[arg(long = "bssplit", value_name = "MIX")]
    pub bssplit: Option<String>,
    /// read|write|randread|randwrite|rw|readwrite|randrw
    #[arg(long = "rw", value_name = "MODE")]
    pub rw: Option<String>,
    /// Read share of a mixed workload, 0..=100
    #[arg(long = "rwmixread", value_name = "PCT")]
    pub rwmixread: Option<String>,
    /// Share of I/Os at random offsets, 0..=100
    #[arg(long = "percentage_random", value_name = "PCT")]
    pub percentage_random: Option<String>,
    /// Outstanding I/Os per worker
    #[arg(long = "iodepth", value_name = "N")]
    pub iodepth: Option<String>,
    /// Completions to wait for before refilling the queue (fio's; default 1, at most iodepth)
    #[arg(long = "iodepth_batch_complete_min", value_name = "N")]
    pub iodepth_batch_complete_min: Option<String>,
    /// Requests queued before they are submitted together (fio's; 1: each as
    /// queued; default: each on a device queue, else one submit per refill)
    #[arg(long = "iodepth_batch_submit", value_name = "N")]
    pub iodepth_batch_submit: Option<String>,
    /// Workers per VM
    #[arg(long = "numjobs", value_name = "N")]
    pub numjobs: Option<String>,
    /// Warm-up excluded from the summary, e.g. 10s, 1m
    #[arg(long = "ramp_time", value_name = "DURATION")]
    pub ramp_time: Option<String>,
    /// Measured time, e.g. 60 (seconds), 5m; 0 with --io_size = until done
    #[arg(long = "runtime", value_name = "DURATION")]
    pub runtime: Option<String>,
    /// Region used on each disk (and created file size), e.g. 1GiB
    #[arg(long = "size", value_name = "SIZE")]
    pub size: Option<String>,
    /// Start of the region on each disk
    #[arg(long = "offset", value_name = "SIZE")]
    pub offset: Option<String>,
    /// Disks on one file/device/LUN/export: slice (disk k at offset + k*size) | shared
    #[arg(
        long = "disk_layout",
        alias = "disk-layout",
        value_name = "slice|shared"
    )]
    pub disk_layout: Option<String>,
    /// Stop each worker after this many bytes
    #[arg(long = "io_size", value_name = "SIZE")]
    pub io_size: Option<String>,
    /// End the run when an I/O is in flight this long, e.g. 30s (default); 0|none = no limit
    #[arg(long = "io-timeout", alias = "io_timeout", value_name = "DURATION")]
    pub io_timeout: Option<String>,
    /// Bypass the page cache (O_DIRECT): 0|1
    #[arg(long = "direct", value_name = "0|1")]
    pub direct: Option<String>,
    /// Synchronous writes: 0|1|dsync|sync
    #[arg(long = "sync", value_name = "MODE")]
    pub sync: Option<String>,
    /// io_uring submission-queue polling thread (IORING_SETUP_SQPOLL; file: targets): 0|1
    #[arg(long = "sqpoll", value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
    pub sqpoll: Option<String>,
    /// Pin the SQPOLL thread to this CPU (needs --sqpoll)
    #[arg(long = "sqpoll_cpu", value_name = "CPU")]
    pub sqpoll_cpu: Option<String>,
    /// Polled completions (IORING_SETUP_IOPOLL; needs --direct 1 and a device with poll queues): 0|1
    #[arg(long = "hipri", value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
    pub hipri: Option<String>,
    /// I/O rate cap per worker, I/Os per second
    #[arg(long = "rate_iops", value_name = "N")]
    pub rate_iops: Option<String>,
    /// Bandwidth cap per worker, bytes per second, e.g. 10MiB
    #[arg(long = "rate", value_name = "SIZE")]
    pub rate: Option<String>,
    /// How a rate cap paces I/O: closed (fio-like, latency from submission) | open (fixed schedule, latency from each I/O's scheduled time)
    #[arg(long = "rate_mode", alias = "rate-mode", value_name = "closed|open")]
    pub rate_mode: Option<String>,
    /// Offset alignment, e.g. 4k (default: the smallest block size)
    #[arg(long = "blockalign", value_name = "SIZE")]
    pub blockalign: Option<String>,
    /// Number of VMs (identical worker groups)
    #[arg(long = "vms", value_name = "N")]
    pub vms: Option<String>,
    /// Disks (files or LUNs) per VM
    #[arg(long = "disks", value_name = "N")]
    pub disks: Option<String>,
    /// Data written: random|zeros|compress=N,dedupe=M
    #[arg(long = "content", value_name = "KIND")]
    pub content: Option<String>,
    /// Statistics interval, e.g. 1s, 500ms
    #[arg(long = "interval", value_name = "DURATION")]
    pub interval: Option<String>,
    /// Seed of every pseudo-random choice (decimal or 0x hex)
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<String>,
    /// Verify data: self-describing blocks, every read checked (docs/verify.md): 0|1
    #[arg(long = "verify", value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
    pub verify: Option<String>,
    /// Journal acknowledged writes to FILE for `storlab verify --journal` (implies --verify)
    #[arg(long = "journal", value_name = "FILE")]
    pub journal: Option<String>,
    /// End the ramp once the fleet's figure settles: iops|bw|lat[_slope]:P%, e.g. iops:5% (--ramp_time is then the longest ramp)
    #[arg(long = "steadystate", alias = "ss", value_name = "METRIC:P%")]
    pub steadystate: Option<String>,
    /// The steady-state window, e.g. 10s (default: 5 intervals)
    #[arg(
        long = "steadystate_duration",
        alias = "ss_dur",
        value_name = "DURATION"
    )]
    pub steadystate_duration: Option<String>,
    /// How long into the ramp the steady-state gate starts watching, e.g. 30s (default 0)
    #[arg(
        long = "steadystate_ramp_time",
        alias = "ss_ramp",
        value_name = "DURATION"
    )]
    pub steadystate_ramp_time: Option<String>,
}

impl Flags {
    /// The flags that were given, as (job-file key, value).
    fn given(&self) -> Vec<(&'static str, &str)> {
        let all: [(&'static str, &Option<String>); 35] = [
            ("bs", &self.bs),
            ("bssplit", &self.bssplit),
            ("rw", &self.rw),
            ("rwmixread", &self.rwmixread),
            ("percentage_random", &self.percentage_random),
            ("iodepth", &self.iodepth),
            (
                "iodepth_batch_complete_min",
                &self.iodepth_batch_complete_min,
            ),
            ("iodepth_batch_submit", &self.iodepth_batch_submit),
            ("numjobs", &self.numjobs),
            ("ramp_time", &self.ramp_time),
            ("runtime", &self.runtime),
            ("size", &self.size),
            ("offset", &self.offset),
            ("disk_layout", &self.disk_layout),
            ("io_size", &self.io_size),
            ("io_timeout", &self.io_timeout),
            ("direct", &self.direct),
            ("sync", &self.sync),
            ("sqpoll", &self.sqpoll),
            ("sqpoll_cpu", &self.sqpoll_cpu),
            ("hipri", &self.hipri),
            ("rate_iops", &self.rate_iops),
            ("rate", &self.rate),
            ("rate_mode", &self.rate_mode),
            ("blockalign", &self.blockalign),
            ("vms", &self.vms),
            ("disks", &self.disks),
            ("content", &self.content),
            ("interval", &self.interval),
            ("steadystate", &self.steadystate),
            ("steadystate_duration", &self.steadystate_duration),
            ("steadystate_ramp_time", &self.steadystate_ramp_time),
            ("seed", &self.seed),
            ("verify", &self.verify),
            ("journal", &self.journal),
        ];
        all.into_iter()
            .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
            .collect()
    }

    /// Whether any flag was given.
    pub fn is_empty(&self) -> bool {
        self.given().is_empty()
    }

    /// The flags as settings; errors name the flag (`--bs`).
    pub fn settings(&self) -> Result<Settings, SpecError> {
        let mut s = Settings::default();
        for (key, v) in self.given() {
            s.set(key, &Value::String(v.to_string())).map_err(|mut e| {
                if !e.field.starts_with("--") {
                    e.field = format!("--{}", e.field);
                }
                e
            })?;
        }
        Ok(s)
    }

    /// With `None`, a one-point job named "cli" from the job-file defaults and
    /// these flags; with `Some(job)`, the job with the given fields overridden in
    /// every load point and every group. The result is validated.
    pub fn apply(&self, job: Option<Job>) -> Result<Job, SpecError> {
        let settings = self.settings()?;
        let job = match job {
            None => job_from_settings("cli", &settings),
            Some(mut job) => {
                for p in &mut job.points {
                    settings.apply(p);
                }
                if !self.is_empty() {
                    // The catalogue's provenance no longer describes overridden values.
                    let given: Vec<&'static str> = self.given().iter().map(|(k, _)| *k).collect();
                    let mut overridden: Vec<&str> = Vec::new();
                    for k in &given {
                        overridden.extend_from_slice(match *k {
                            "rw" => &["rwmixread", "percentage_random"],
                            "bssplit" => &["bs"],
                            "rate_iops" => &["rate"],
                            "io_size" => &["io_size", "runtime", "size"],
                            _ => std::slice::from_ref(k),
                        });
                    }
                    job.provenance
                        .retain(|p| !overridden.contains(&p.field.as_str()));
                }
                job
            }
        };
        validate_job(&job)?;
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::super::jobfile::{DEFAULT_SEED, parse};
    use super::super::{BlockSizes, Content, Rate, SyncMode};
    use super::*;
    use crate::workload::testing::assert_has;
    use clap::Parser;
    use std::time::Duration;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        flags: Flags,
    }

    fn flags(args: &[&str]) -> Flags {
        Cli::try_parse_from(std::iter::once("storlab").chain(args.iter().copied()))
            .unwrap()
            .flags
    }

    #[test]
    fn no_flags_is_the_default_job() {
        let job = Flags::default().apply(None).unwrap();
        assert_eq!(job.name, "cli");
        assert_eq!(job.points, parse("name = \"cli\"", "cli").unwrap().points);
        assert_eq!(job.points[0].seed, DEFAULT_SEED);
    }

    #[test]
    fn builds_a_job() {
        let f = flags(&[
            "--bs",
            "8k",
            "--rw",
            "randrw",
            "--rwmixread",
            "60",
            "--iodepth",
            "32",
            "--numjobs",
            "4",
            "--vms",
            "2",
            "--disks",
            "2",
            "--size",
            "1GiB",
            "--runtime",
            "60",
            "--ramp_time",
            "10s",
            "--direct",
            "1",
            "--sync",
            "dsync",
            "--rate_iops",
            "5000",
            "--content",
            "compress=50,dedupe=20",
            "--interval",
            "500ms",
            "--seed",
            "7",
            "--blockalign",
            "4k",
        ]);
        let job = f.apply(None).unwrap();
        let p = &job.points[0];
        let g = &p.groups[0];
        assert_eq!((g.vms, g.workers_per_vm, g.disks_per_vm), (2, 4, 2));
        assert_eq!(g.access.bs, BlockSizes::one(8192));
        assert_eq!(
            (g.access.read_pct, g.access.random_pct, g.access.iodepth),
            (60, 100, 32)
        );
        assert_eq!(
            (g.access.rate, g.access.align),
            (Some(Rate::Iops(5000)), Some(4096))
        );
        assert_eq!(
            (p.size, p.direct, p.sync, p.seed),
            (1 << 30, true, SyncMode::Dsync, 7)
        );
        assert_eq!(
            (p.runtime, p.ramp, p.interval),
            (
                Duration::from_secs(60),
                Duration::from_secs(10),
                Duration::from_millis(500)
            )
        );
        assert_eq!(
            p.content,
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 20
            }
        );
    }

    #[test]
    fn overrides_every_point_and_group() {
        let base = parse(
            "size = \"8m\"\n[[group]]\nrw = \"read\"\n[[group]]\nrw = \"write\"\n[sweep]\nvms = [1, 2]\n",
            "x.toml",
        )
        .unwrap();
        let job = flags(&[
            "--bssplit",
            "4k/50:8k/50",
            "--percentage_random",
            "100",
            "--io_size",
            "4m",
        ])
        .apply(Some(base))
        .unwrap();
        assert_eq!(job.points.len(), 2);
        for p in &job.points {
            assert_eq!((p.io_limit, p.runtime), (Some(4 << 20), Duration::ZERO));
            for g in &p.groups {
                assert_eq!(g.access.bs.0, vec![(4096, 50), (8192, 50)]);
                assert_eq!(g.access.random_pct, 100);
            }
            assert_eq!(
                (p.groups[0].access.read_pct, p.groups[1].access.read_pct),
                (100, 0)
            );
        }
        assert_eq!(job.points[1].groups[0].vms, 2);
    }

    #[test]
    fn overriding_a_builtin_drops_its_provenance() {
        let base =
            super::super::catalogue::get("db-8k-read", super::super::Profile::Quick).unwrap();
        assert!(base.provenance.iter().any(|p| p.field == "iodepth"));
        let job = flags(&["--iodepth", "8", "--rw", "randwrite"])
            .apply(Some(base.clone()))
            .unwrap();
        assert_eq!(job.points[0].groups[0].access.iodepth, 8);
        assert_eq!(job.points[0].groups[0].access.batch_complete_min, 1);
        let batched = flags(&["--iodepth", "8", "--iodepth_batch_complete_min", "4"])
            .apply(Some(base.clone()))
            .unwrap();
        assert_eq!(batched.points[0].groups[0].access.batch_complete_min, 4);
        assert_eq!(batched.points[0].groups[0].access.submit_batch, 0);
        let submitted = flags(&["--iodepth", "8", "--iodepth_batch_submit", "2"])
            .apply(Some(base.clone()))
            .unwrap();
        assert_eq!(submitted.points[0].groups[0].access.submit_batch, 2);
        let e = flags(&["--iodepth", "8", "--iodepth_batch_submit", "0"])
            .apply(Some(base.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("iodepth_batch_submit"), "{e}");
        assert!(!job.points[0].sqpoll && !job.points[0].hipri);
        // Bare --sqpoll and --hipri mean 1; --sqpoll_cpu pins the thread.
        let polled = flags(&["--sqpoll", "--sqpoll_cpu", "1", "--direct", "1", "--hipri"])
            .apply(Some(base.clone()))
            .unwrap();
        let p = &polled.points[0];
        assert_eq!((p.sqpoll, p.sqpoll_cpu, p.hipri), (true, Some(1), true));
        let off = flags(&["--sqpoll", "0"]).apply(Some(base.clone())).unwrap();
        assert!(!off.points[0].sqpoll);
        let e = flags(&["--sqpoll_cpu", "x"])
            .apply(Some(base.clone()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid --sqpoll_cpu = x (allowed: a CPU number, e.g. 0)"
        );
        assert_eq!(job.points[0].groups[0].access.read_pct, 0);
        let fields: Vec<_> = job.provenance.iter().map(|p| p.field.as_str()).collect();
        assert!(
            !fields.contains(&"iodepth") && !fields.contains(&"rwmixread"),
            "{fields:?}"
        );
        assert!(fields.contains(&"bs"));
    }

    #[test]
    fn errors_name_the_flag() {
        let e = flags(&["--rwmixread", "150"])
            .apply(None)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid --rwmixread = 150 (allowed: 0..=100)");
        let e = flags(&["--direct", "yes"])
            .apply(None)
            .unwrap_err()
            .to_string();
        assert_has(&e, "--direct = yes");
        let e = flags(&["--bs", "4k", "--bssplit", "4k/100"])
            .apply(None)
            .unwrap_err()
            .to_string();
        assert_has(&e, "bs/bssplit");
        // Range errors come from validation, with the field's name.
        let e = flags(&["--iodepth", "0"])
            .apply(None)
            .unwrap_err()
            .to_string();
        assert_has(&e, "invalid iodepth = 0");
        let e = flags(&["--direct", "1", "--bs", "1000"])
            .apply(None)
            .unwrap_err()
            .to_string();
        assert_has(&e, "invalid bs = 1000");
    }
}
