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

/// Declares the workload flags from one list, so a flag is written once: the
/// [`Flags`] struct (a `pub key: Option<String>` field per flag, parsed by clap
/// as `--key`) and the job-file key of each flag ([`Flags::KEYS`], which
/// [`Flags::given`] reads the fields by).
///
/// An entry is the flag's help (doc comment, shown by `--help`), its `#[arg]`
/// settings (at least `value_name`; also `alias`, `num_args`, ... as in clap),
/// and its job-file key, which is also the field's name and the flag's name:
///
/// ```text
/// /// Block size, e.g. 4k, 64KiB (binary units)
/// #[arg(value_name = "SIZE")]
/// bs,
/// ```
///
/// `key as "io-timeout"` spells the flag differently from its key. The key must
/// be one [`Settings::set`] accepts (a test checks every one); entries appear in
/// `--help` in their order here.
macro_rules! workload_flags {
    (
        $(#[$struct_attr:meta])*
        pub struct Flags {
            $(
                $(#[$attr:meta])*
                $key:ident $(as $long:literal)?,
            )+
        }
    ) => {
        $(#[$struct_attr])*
        #[derive(clap::Args, Clone, Debug, Default)]
        pub struct Flags {
            $(
                $(#[$attr])*
                #[arg(long = workload_flags!(@long $key $($long)?))]
                pub $key: Option<String>,
            )+
        }

        impl Flags {
            /// The job-file key of every flag, in `--help` order.
            pub const KEYS: &[&str] = &[$(stringify!($key)),+];

            /// The flags that were given, as (job-file key, value).
            pub fn given(&self) -> Vec<(&'static str, &str)> {
                [$((stringify!($key), &self.$key)),+]
                    .into_iter()
                    .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
                    .collect()
            }
        }
    };
    (@long $key:ident) => { stringify!($key) };
    (@long $key:ident $long:literal) => { $long };
}

workload_flags! {
    /// Workload flags; each overrides one setting of every load point and group.
    pub struct Flags {
        /// Block size, e.g. 4k, 64KiB (binary units)
        #[arg(value_name = "SIZE")]
        bs,
        /// Block size mix, fio syntax: 4k/50:8k/30:64k/20
        #[arg(value_name = "MIX")]
        bssplit,
        /// read|write|randread|randwrite|rw|readwrite|randrw
        #[arg(value_name = "MODE")]
        rw,
        /// Read share of a mixed workload, 0..=100
        #[arg(value_name = "PCT")]
        rwmixread,
        /// Share of I/Os at random offsets, 0..=100
        #[arg(value_name = "PCT")]
        percentage_random,
        /// Outstanding I/Os per worker
        #[arg(value_name = "N")]
        iodepth,
        /// Completions to wait for before refilling the queue (fio's; default 1, at most iodepth)
        #[arg(value_name = "N")]
        iodepth_batch_complete_min,
        /// Requests queued before they are submitted together (fio's; 1: each as
        /// queued; default: each on a device queue, else one submit per refill)
        #[arg(value_name = "N")]
        iodepth_batch_submit,
        /// Workers per VM
        #[arg(value_name = "N")]
        numjobs,
        /// Warm-up excluded from the summary, e.g. 10s, 1m
        #[arg(value_name = "DURATION")]
        ramp_time,
        /// Measured time, e.g. 60 (seconds), 5m; 0 with --io_size = until done
        #[arg(value_name = "DURATION")]
        runtime,
        /// Region used on each disk (and created file size), e.g. 1GiB
        #[arg(value_name = "SIZE")]
        size,
        /// Start of the region on each disk
        #[arg(value_name = "SIZE")]
        offset,
        /// Disks on one file/device/LUN/export: slice (disk k at offset + k*size) | shared
        #[arg(alias = "disk-layout", value_name = "slice|shared")]
        disk_layout,
        /// Stop each worker after this many bytes
        #[arg(value_name = "SIZE")]
        io_size,
        /// End the run when an I/O is in flight this long, e.g. 30s (default); 0|none = no limit
        #[arg(alias = "io_timeout", value_name = "DURATION")]
        io_timeout as "io-timeout",
        /// Ride through a lost connection (NBD): connect again for up to this long, e.g. 60s, and send again what was in flight; 0|none (default) = a lost connection ends the run
        #[arg(alias = "reconnect_timeout", value_name = "DURATION")]
        reconnect_timeout as "reconnect-timeout",
        /// Bypass the page cache (O_DIRECT): 0|1
        #[arg(value_name = "0|1")]
        direct,
        /// Synchronous writes: 0|1|dsync|sync
        #[arg(value_name = "MODE")]
        sync,
        /// io_uring submission-queue polling thread (IORING_SETUP_SQPOLL; file: targets): 0|1
        #[arg(value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
        sqpoll,
        /// Pin the SQPOLL thread to this CPU (needs --sqpoll)
        #[arg(value_name = "CPU")]
        sqpoll_cpu,
        /// Polled completions (IORING_SETUP_IOPOLL; needs --direct 1 and a device with poll queues): 0|1
        #[arg(value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
        hipri,
        /// I/O engine of file: targets: io_uring (default) | psync (pread/pwrite, one I/O in flight per worker)
        #[arg(value_name = "io_uring|psync")]
        ioengine,
        /// I/O rate cap per worker, I/Os per second
        #[arg(value_name = "N")]
        rate_iops,
        /// Bandwidth cap per worker, bytes per second, e.g. 10MiB
        #[arg(value_name = "SIZE")]
        rate,
        /// How a rate cap paces I/O: closed (fio-like, latency from submission) | open (fixed schedule, latency from each I/O's scheduled time)
        #[arg(alias = "rate-mode", value_name = "closed|open")]
        rate_mode,
        /// Where random offsets fall: random (uniform, default) | zipf:THETA | pareto:H | normal:SIGMA% [:CENTER] | zoned:ACCESS%/SIZE%:... | zoned_abs:ACCESS%/SIZE:...
        #[arg(value_name = "DIST")]
        random_distribution,
        /// Pause after each burst, e.g. 2ms (a bare number is microseconds, as in fio); 0 = none
        #[arg(value_name = "DURATION")]
        thinktime,
        /// I/Os per burst before the pause (each burst completes first; default 1)
        #[arg(value_name = "N")]
        thinktime_blocks,
        /// How much of the pause spins the CPU rather than sleeps, e.g. 500us
        #[arg(value_name = "DURATION")]
        thinktime_spin,
        /// Offset alignment, e.g. 4k (default: the smallest block size)
        #[arg(value_name = "SIZE")]
        blockalign,
        /// Number of VMs (identical worker groups)
        #[arg(value_name = "N")]
        vms,
        /// Disks (files or LUNs) per VM
        #[arg(value_name = "N")]
        disks,
        /// Data written: random|zeros|compress=N,dedupe=M
        #[arg(value_name = "KIND")]
        content,
        /// Statistics interval, e.g. 1s, 500ms
        #[arg(value_name = "DURATION")]
        interval,
        /// Seed of every pseudo-random choice (decimal or 0x hex)
        #[arg(value_name = "N")]
        seed,
        /// Verify data: self-describing blocks, every read checked (docs/verify.md): 0|1
        #[arg(value_name = "0|1", num_args = 0..=1, default_missing_value = "1")]
        verify,
        /// Journal acknowledged writes to FILE for `storlab verify --journal` (implies --verify)
        #[arg(value_name = "FILE")]
        journal,
        /// End the ramp once the fleet's figure settles: iops|bw|lat[_slope]:P%, e.g. iops:5% (--ramp_time is then the longest ramp)
        #[arg(alias = "ss", value_name = "METRIC:P%")]
        steadystate,
        /// The steady-state window, e.g. 10s (default: 5 intervals)
        #[arg(alias = "ss_dur", value_name = "DURATION")]
        steadystate_duration,
        /// How long into the ramp the steady-state gate starts watching, e.g. 30s (default 0)
        #[arg(alias = "ss_ramp", value_name = "DURATION")]
        steadystate_ramp_time,
    }
}

impl Flags {
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

    /// The error applying `args` to `job` (`None`: the flags alone) gives.
    fn error(args: &[&str], job: Option<Job>) -> String {
        flags(args).apply(job).unwrap_err().to_string()
    }

    #[test]
    fn every_flag_is_a_job_file_key() {
        use super::super::settings::{GROUP_KEYS, SPEC_KEYS};
        for &key in Flags::KEYS {
            assert!(
                GROUP_KEYS.contains(&key) || SPEC_KEYS.contains(&key),
                "--{key} is not a job-file key (settings::GROUP_KEYS or SPEC_KEYS)"
            );
            // Any error is about the value: Settings::set knows the key.
            if let Err(e) = Settings::default().set(key, &Value::String("?".into())) {
                assert!(!e.field.starts_with("unknown"), "--{key}: {e}");
            }
        }
    }

    #[test]
    fn flags_spelled_otherwise_and_aliases_give_their_key() {
        // Each key once by its flag, once by an alias (io_timeout's flag is --io-timeout).
        for line in [
            "--io-timeout 5s --disk_layout shared --ss iops:5%",
            "--io_timeout 5s --disk-layout shared --steadystate iops:5%",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            assert_eq!(
                flags(&args).given(),
                [
                    ("disk_layout", "shared"),
                    ("io_timeout", "5s"),
                    ("steadystate", "iops:5%")
                ]
            );
        }
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
        let e = error(
            &["--iodepth", "8", "--iodepth_batch_submit", "0"],
            Some(base.clone()),
        );
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
        let e = error(&["--sqpoll_cpu", "x"], Some(base.clone()));
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
        let e = error(&["--rwmixread", "150"], None);
        assert_eq!(e, "invalid --rwmixread = 150 (allowed: 0..=100)");
        let e = error(&["--direct", "yes"], None);
        assert_has(&e, "--direct = yes");
        let e = error(&["--bs", "4k", "--bssplit", "4k/100"], None);
        assert_has(&e, "bs/bssplit");
        // Range errors come from validation, with the field's name.
        let e = error(&["--iodepth", "0"], None);
        assert_has(&e, "invalid iodepth = 0");
        let e = error(&["--direct", "1", "--bs", "1000"], None);
        assert_has(&e, "invalid bs = 1000");
    }
}
