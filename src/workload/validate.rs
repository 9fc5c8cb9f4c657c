//! Checks a [`Spec`] or [`Job`] before anything runs, so a bad value is reported
//! once, in one line naming the field, instead of as an engine failure minutes later.
//!
//! Field names in errors are the user-facing ones (fio's where fio has one:
//! `bs`, `rwmixread`, `iodepth`, `numjobs`), whatever the spec was built from.

use super::units::{format_duration, format_size};
use super::{Content, DiskLayout, Group, Job, Rate, Spec};
use std::time::Duration;

/// The longest `reconnect_timeout`.
const MAX_RECONNECT: Duration = Duration::from_secs(600);

/// Largest block size storlab issues: beyond this, buffers per slot get silly
/// and no study uses more than 8 MiB.
pub const MAX_BS: u64 = 64 << 20;
/// Sector size that O_DIRECT I/O must be aligned to.
pub const DIRECT_ALIGN: u64 = 512;

pub use super::error::SpecError;

fn check_range(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), SpecError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(SpecError::invalid(field, v, format!("{lo}..={hi}")))
    }
}

fn check_pct(field: &str, v: u8) -> Result<(), SpecError> {
    check_range(field, v as u64, 0, 100)
}

fn validate_group(g: &Group, spec: &Spec) -> Result<(), SpecError> {
    check_range("vms", g.vms as u64, 1, 100_000)?;
    check_range("numjobs", g.workers_per_vm as u64, 1, 4096)?;
    check_range("disks", g.disks_per_vm as u64, 1, 1024)?;
    let a = &g.access;
    let direct = spec.direct;
    if a.bs.0.is_empty() {
        return Err(SpecError::invalid(
            "bs",
            "(none)",
            "at least one block size",
        ));
    }
    let bs_allowed = if direct {
        format!(
            "{} ..= {}, a multiple of 512 with direct I/O",
            format_size(DIRECT_ALIGN),
            format_size(MAX_BS)
        )
    } else {
        format!("1 B ..= {}", format_size(MAX_BS))
    };
    for &(size, weight) in &a.bs.0 {
        if size == 0 || size > MAX_BS || (direct && size % DIRECT_ALIGN != 0) {
            return Err(SpecError::invalid("bs", size, bs_allowed));
        }
        if weight == 0 {
            return Err(SpecError::invalid(
                "bssplit",
                format!("{size}/0"),
                "weights > 0 (leave a size out instead of giving it weight 0)",
            ));
        }
    }
    check_pct("rwmixread", a.read_pct)?;
    check_pct("percentage_random", a.random_pct)?;
    check_range("iodepth", a.iodepth as u64, 1, 65536)?;
    check_range(
        "iodepth_batch_complete_min",
        a.batch_complete_min as u64,
        1,
        a.iodepth as u64,
    )?;
    if a.submit_batch != 0 {
        check_range(
            "iodepth_batch_submit",
            a.submit_batch as u64,
            1,
            a.iodepth as u64,
        )?;
    }
    if spec.size < a.bs.max() {
        return Err(SpecError::invalid(
            "size",
            format_size(spec.size),
            format!(
                "at least the largest block size ({})",
                format_size(a.bs.max())
            ),
        ));
    }
    let align = a.alignment();
    if align == 0 || align > spec.size || (direct && align % DIRECT_ALIGN != 0) {
        let mut allowed = format!("1 B ..= size ({})", format_size(spec.size));
        if direct {
            allowed.push_str(", a multiple of 512 with direct I/O");
        }
        return Err(SpecError::invalid("blockalign", align, allowed));
    }
    match a.rate {
        Some(Rate::Iops(0)) => return Err(SpecError::invalid("rate_iops", 0, "> 0")),
        Some(Rate::Bytes(0)) => return Err(SpecError::invalid("rate", 0, "> 0 bytes per second")),
        _ => {}
    }
    if a.rate.is_none() && a.rate_mode == super::RateMode::Open {
        return Err(SpecError::invalid(
            "rate_mode",
            "open",
            "closed; open needs rate_iops or rate to schedule by (--curve sets its own)",
        ));
    }
    let zones = a.distribution.zones_bytes();
    if zones > spec.size {
        return Err(SpecError::invalid(
            "random_distribution",
            &a.distribution,
            format!(
                "zoned_abs zones that fit in the region (size {}; these span {})",
                format_size(spec.size),
                format_size(zones)
            ),
        ));
    }
    if let Some(t) = a.think {
        check_range("thinktime_blocks", t.blocks as u64, 1, 1_000_000)?;
        if t.time > MAX_THINK {
            return Err(SpecError::invalid(
                "thinktime",
                format_duration(t.time),
                format!("0 ..= {}", format_duration(MAX_THINK)),
            ));
        }
        if t.spin > t.time {
            return Err(SpecError::invalid(
                "thinktime_spin",
                format_duration(t.spin),
                format!("0 ..= thinktime ({})", format_duration(t.time)),
            ));
        }
    }
    Ok(())
}

/// The longest think time: a pause longer than this is a different test
/// (a run that mostly idles), and likely a unit slip (fio reads thinktime in
/// microseconds).
pub const MAX_THINK: Duration = Duration::from_secs(60);

/// Check one load point.
pub fn validate(spec: &Spec) -> Result<(), SpecError> {
    if spec.groups.is_empty() {
        return Err(SpecError::invalid("group", "(none)", "at least one group"));
    }
    if spec.size == 0 {
        return Err(SpecError::invalid("size", 0, "> 0"));
    }
    if spec.hipri && !spec.direct {
        return Err(SpecError::invalid(
            "hipri",
            1,
            "0 without direct = 1; polled completions (IORING_SETUP_IOPOLL) need O_DIRECT: \
             set direct = 1 or drop hipri",
        ));
    }
    if spec.ioengine == super::IoEngine::Psync && (spec.sqpoll || spec.hipri) {
        return Err(SpecError::invalid(
            "ioengine",
            "psync",
            "io_uring with sqpoll or hipri (io_uring's polling; psync has none): \
             set ioengine = io_uring or drop sqpoll and hipri",
        ));
    }
    if spec.sqpoll_cpu.is_some() && !spec.sqpoll {
        return Err(SpecError::invalid(
            "sqpoll_cpu",
            spec.sqpoll_cpu.unwrap_or_default(),
            "unset without sqpoll = 1; it pins the SQPOLL thread: set sqpoll = 1 or drop sqpoll_cpu",
        ));
    }
    if spec.direct && spec.offset % DIRECT_ALIGN != 0 {
        return Err(SpecError::invalid(
            "offset",
            spec.offset,
            "a multiple of 512 with direct I/O",
        ));
    }
    if spec.offset.checked_add(spec.size).is_none() {
        return Err(SpecError::invalid(
            "offset",
            spec.offset,
            "offset + size below 2^64",
        ));
    }
    if spec.disk_layout == DiskLayout::Slice {
        // Slices of a single target start at offset + k * size.
        let disks: u64 = spec
            .groups
            .iter()
            .map(|g| g.vms as u64 * g.disks_per_vm as u64)
            .sum();
        if disks
            .checked_mul(spec.size)
            .and_then(|b| b.checked_add(spec.offset))
            .is_none()
        {
            return Err(SpecError::invalid(
                "size",
                spec.size,
                "offset + disks x size below 2^64 (disk_layout = slice)",
            ));
        }
        if spec.direct && spec.size % DIRECT_ALIGN != 0 {
            return Err(SpecError::invalid(
                "size",
                spec.size,
                "a multiple of 512 with direct I/O and disk_layout = slice \
                 (each disk's slice starts at offset + k x size), or disk_layout = shared",
            ));
        }
    }
    let several = spec.groups.len() > 1;
    for g in &spec.groups {
        validate_group(g, spec).map_err(|e| {
            if several {
                e.context(format!("group {}", g.name))
            } else {
                e
            }
        })?;
    }
    if spec.runtime.is_zero() && !spec.open_ended() {
        return Err(SpecError::invalid(
            "runtime",
            "0 s",
            "> 0, or 0 together with io_size or --replay",
        ));
    }
    let (lo, hi) = (Duration::from_millis(10), Duration::from_secs(3600));
    if !(lo..=hi).contains(&spec.interval) {
        return Err(SpecError::invalid(
            "interval",
            format_duration(spec.interval),
            "10 ms ..= 1 h",
        ));
    }
    if let Some(g) = &spec.steady {
        check_steady(spec, g)?;
    }
    if let Content::Mixed {
        compress_pct,
        dedupe_pct,
    } = spec.content
    {
        check_pct("content compress", compress_pct)?;
        check_pct("content dedupe", dedupe_pct)?;
    }
    if spec.io_limit == Some(0) {
        return Err(SpecError::invalid("io_size", 0, "> 0 when set"));
    }
    if !spec.reconnect_timeout.is_zero() {
        let past_io = !spec.io_timeout.is_zero() && spec.reconnect_timeout >= spec.io_timeout;
        if past_io || spec.reconnect_timeout > MAX_RECONNECT {
            return Err(SpecError::invalid(
                "reconnect_timeout",
                format_duration(spec.reconnect_timeout),
                format!(
                    "0 or none (no reconnect), or a duration shorter than io_timeout ({}) \
                     and at most {}: an I/O waiting out the outage must not time out first",
                    format_duration(spec.io_timeout),
                    format_duration(MAX_RECONNECT)
                ),
            ));
        }
    }
    let min_timeout = crate::workload::MIN_IO_TIMEOUT;
    if !spec.io_timeout.is_zero() && spec.io_timeout < min_timeout {
        return Err(SpecError::invalid(
            "io_timeout",
            format_duration(spec.io_timeout),
            format!(
                "0 or none (no limit), or at least {}",
                format_duration(min_timeout)
            ),
        ));
    }
    Ok(())
}

/// Check every load point of a job; errors name the point when there are several.
pub fn validate_job(job: &Job) -> Result<(), SpecError> {
    if job.points.is_empty() {
        return Err(SpecError::invalid("load points", "(none)", "at least one")
            .context(format!("job {}", job.name)));
    }
    let several = job.points.len() > 1;
    for p in &job.points {
        validate(p).map_err(|e| {
            if several {
                e.context(format!("load point \"{}\"", p.label))
            } else {
                e
            }
        })?;
    }
    Ok(())
}

/// The steady-state gate needs a ramp to end early and a window of at least
/// two intervals that fits in it.
fn check_steady(spec: &Spec, g: &crate::workload::steady::SteadyGate) -> Result<(), SpecError> {
    if spec.ramp.is_zero() {
        return Err(SpecError::invalid(
            "ramp_time",
            "0 s",
            "> 0 with steadystate (the longest ramp the gate may end early)",
        ));
    }
    let lo = spec.interval * 2;
    let room = spec.ramp.saturating_sub(g.delay);
    if g.window < lo || g.window > room {
        let hi = if g.delay.is_zero() {
            "(ramp_time)".to_string()
        } else {
            format!(
                "(ramp_time less steadystate_ramp_time {})",
                format_duration(g.delay)
            )
        };
        return Err(SpecError::invalid(
            "steadystate_duration",
            format_duration(g.window),
            format!(
                "{} (two intervals) ..= {} {hi}",
                format_duration(lo),
                format_duration(room)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::BlockSizes;
    use super::*;

    fn spec() -> Spec {
        let mut s = crate::workload::test_spec(1, 1, 1);
        s.direct = true;
        s
    }

    fn err(f: impl FnOnce(&mut Spec)) -> String {
        let mut s = spec();
        f(&mut s);
        validate(&s).unwrap_err().to_string()
    }

    #[test]
    fn good_spec_passes() {
        validate(&spec()).unwrap();
    }

    #[test]
    fn groups() {
        assert_eq!(
            err(|s| s.groups.clear()),
            "invalid group = (none) (allowed: at least one group)"
        );
        assert_eq!(
            err(|s| s.groups[0].vms = 0),
            "invalid vms = 0 (allowed: 1..=100000)"
        );
        assert!(err(|s| s.groups[0].vms = 100_001).contains("vms = 100001"));
        assert!(
            err(|s| s.groups[0].workers_per_vm = 0).contains("numjobs = 0 (allowed: 1..=4096)")
        );
        assert!(err(|s| s.groups[0].workers_per_vm = 4097).contains("numjobs = 4097"));
        assert!(err(|s| s.groups[0].disks_per_vm = 0).contains("disks = 0 (allowed: 1..=1024)"));
        assert!(err(|s| s.groups[0].disks_per_vm = 1025).contains("disks = 1025"));
    }

    #[test]
    fn block_sizes() {
        assert_eq!(
            err(|s| s.groups[0].access.bs = BlockSizes::one(0)),
            "invalid bs = 0 (allowed: 512 B ..= 64 MiB, a multiple of 512 with direct I/O)"
        );
        assert!(
            err(|s| s.groups[0].access.bs = BlockSizes::one(MAX_BS + 512)).contains("invalid bs")
        );
        assert!(
            err(|s| s.groups[0].access.bs = BlockSizes::one(1000)).contains("invalid bs = 1000")
        );
        assert!(
            err(|s| s.groups[0].access.bs = BlockSizes(vec![])).contains("at least one block size")
        );
        assert!(
            err(|s| s.groups[0].access.bs = BlockSizes(vec![(4096, 0)]))
                .contains("invalid bssplit")
        );
        let mut s = spec();
        s.direct = false;
        s.groups[0].access.bs = BlockSizes::one(1000);
        validate(&s).unwrap();
    }

    #[test]
    fn hipri_needs_direct_and_sqpoll_cpu_needs_sqpoll() {
        assert_eq!(
            err(|s| {
                s.direct = false;
                s.hipri = true;
            }),
            "invalid hipri = 1 (allowed: 0 without direct = 1; polled completions \
             (IORING_SETUP_IOPOLL) need O_DIRECT: set direct = 1 or drop hipri)"
        );
        assert_eq!(
            err(|s| s.sqpoll_cpu = Some(1)),
            "invalid sqpoll_cpu = 1 (allowed: unset without sqpoll = 1; it pins the SQPOLL \
             thread: set sqpoll = 1 or drop sqpoll_cpu)"
        );
        let mut s = spec();
        s.direct = true;
        s.hipri = true;
        s.sqpoll = true;
        s.sqpoll_cpu = Some(0);
        validate(&s).unwrap();
        // psync has no polling: either option with it is refused by name.
        for (sqpoll, hipri) in [(true, false), (false, true)] {
            let e = err(|s| {
                s.direct = true;
                (s.sqpoll, s.hipri) = (sqpoll, hipri);
                s.ioengine = super::super::IoEngine::Psync;
            });
            assert_eq!(
                e,
                "invalid ioengine = psync (allowed: io_uring with sqpoll or hipri (io_uring's \
                 polling; psync has none): set ioengine = io_uring or drop sqpoll and hipri)"
            );
        }
    }

    #[test]
    fn mixes_and_depth() {
        assert_eq!(
            err(|s| s.groups[0].access.read_pct = 150),
            "invalid rwmixread = 150 (allowed: 0..=100)"
        );
        assert!(err(|s| s.groups[0].access.random_pct = 101).contains("percentage_random = 101"));
        assert!(
            err(|s| s.groups[0].access.iodepth = 0).contains("iodepth = 0 (allowed: 1..=65536)")
        );
        assert!(err(|s| s.groups[0].access.iodepth = 65537).contains("iodepth = 65537"));
        // The batch is at least one completion and at most the queue.
        let batch = |n| {
            err(|s| {
                s.groups[0].access.iodepth = 8;
                s.groups[0].access.batch_complete_min = n;
            })
        };
        assert_eq!(
            batch(0),
            "invalid iodepth_batch_complete_min = 0 (allowed: 1..=8)"
        );
        assert_eq!(
            batch(9),
            "invalid iodepth_batch_complete_min = 9 (allowed: 1..=8)"
        );
    }

    #[test]
    fn alignment_and_region() {
        assert!(err(|s| s.groups[0].access.align = Some(0)).contains("invalid blockalign = 0"));
        assert!(err(|s| s.groups[0].access.align = Some(2 << 20)).contains("invalid blockalign"));
        assert!(err(|s| s.groups[0].access.align = Some(1000)).contains("multiple of 512"));
        assert!(err(|s| s.offset = 100).contains("invalid offset = 100"));
        assert!(
            err(|s| s.size = 2048).contains(
                "invalid size = 2 KiB (allowed: at least the largest block size (4 KiB))"
            )
        );
        assert!(err(|s| s.size = 0).contains("invalid size = 0"));
        let mut s = spec();
        s.direct = false;
        s.offset = 100;
        s.groups[0].access.align = Some(100);
        validate(&s).unwrap();
    }

    #[test]
    fn timing() {
        assert!(err(|s| s.runtime = Duration::ZERO).contains("invalid runtime"));
        let mut s = spec();
        s.runtime = Duration::ZERO;
        s.io_limit = Some(1 << 20);
        validate(&s).unwrap();
        assert!(err(|s| s.interval = Duration::from_millis(5)).contains("invalid interval = 5 ms"));
        assert!(err(|s| s.interval = Duration::from_secs(3601)).contains("invalid interval"));
        assert!(err(|s| s.io_limit = Some(0)).contains("invalid io_size = 0"));
    }

    #[test]
    fn rate_and_content() {
        assert!(
            err(|s| s.groups[0].access.rate = Some(Rate::Iops(0)))
                .contains("invalid rate_iops = 0")
        );
        assert!(
            err(|s| s.groups[0].access.rate = Some(Rate::Bytes(0))).contains("invalid rate = 0")
        );
        assert!(
            err(|s| s.content = Content::Mixed {
                compress_pct: 101,
                dedupe_pct: 0
            })
            .contains("invalid content compress = 101")
        );
        assert!(
            err(|s| s.content = Content::Mixed {
                compress_pct: 0,
                dedupe_pct: 200
            })
            .contains("content dedupe = 200")
        );
    }

    #[test]
    fn job_and_context() {
        let mut a = spec();
        a.label = "vms=32".into();
        let mut b = spec();
        b.label = "vms=64".into();
        b.groups[0].access.iodepth = 0;
        let job = Job {
            name: "j".into(),
            description: String::new(),
            profile: None,
            points: vec![a, b],
            provenance: vec![],
            curve: None,
        };
        let e = validate_job(&job)
            .unwrap_err()
            .context("job file jobs/x.toml");
        assert_eq!(
            e.to_string(),
            "job file jobs/x.toml, load point \"vms=64\": invalid iodepth = 0 (allowed: 1..=65536)"
        );
        let empty = Job {
            points: vec![],
            ..job
        };
        assert!(
            validate_job(&empty)
                .unwrap_err()
                .to_string()
                .contains("load points")
        );
        let u = SpecError::unknown(
            "workload",
            "vsphere-4k",
            "vsphere-shared-4k, vsphere-shared-8k",
        );
        assert_eq!(
            u.to_string(),
            "unknown workload \"vsphere-4k\" (allowed: vsphere-shared-4k, vsphere-shared-8k)"
        );
    }
}
