//! The model driven in virtual time by a closed loop of `qd` operations (no
//! sleeping), checked against [`predict`] and against what each part of the
//! model promises.

use super::*;
use crate::media::presets::{self, Kind};
use crate::media::stats::{self, MediaStats};
use crate::media::{MediaOp, Medium, OpKind};
use crate::workload::pattern::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The built-in preset `name`'s figures.
fn params(name: &str) -> Params {
    let p = presets::load(None).unwrap();
    match p.into_iter().find(|p| p.name == name).unwrap().kind {
        Kind::Model(p) => p,
        Kind::Ram => panic!("{name} has no model"),
    }
}

/// Drive `m` with `w` as a closed loop for `warm` then `ops` completions;
/// returns (IOPS, mean latency ns) over the measured part.
fn simulate(m: &Model, w: &Workload, warm: usize, ops: usize) -> (f64, f64) {
    let r = run_closed(m, w, warm, ops);
    (r.iops, r.latency_ns)
}

/// What [`run_closed`] measured: the rate and mean latency over the part
/// after the warm-up, and the medium's counters at its start and end.
struct Run {
    iops: f64,
    latency_ns: f64,
    before: MediaStats,
    after: MediaStats,
}

/// The medium's counters at `at_ns` as a media server would publish them.
fn snapshot(m: &Model, at_ns: u64) -> MediaStats {
    MediaStats {
        version: stats::STATS_VERSION,
        pid: 1,
        medium: m.name().to_string(),
        resets: 0,
        at_ns,
        counters: m.counters(at_ns).unwrap(),
    }
}

/// [`simulate`], with the counters.
fn run_closed(m: &Model, w: &Workload, warm: usize, ops: usize) -> Run {
    let mut rng = Rng::new(42);
    let blocks = w.span / w.bs;
    let mut next_seq = 0u64;
    let mut issue = |now: u64, rng: &mut Rng| -> (u64, u64) {
        let block = if (rng.next_u64() as f64) < w.random * u64::MAX as f64 {
            rng.below(blocks)
        } else {
            next_seq = (next_seq + 1) % blocks;
            next_seq
        };
        let read = (rng.next_u64() as f64) < w.read * u64::MAX as f64;
        let op = MediaOp {
            kind: if read { OpKind::Read } else { OpKind::Write },
            offset: block * w.bs,
            len: w.bs as u32,
            sync: w.sync,
        };
        (m.schedule(&op, now), now)
    };
    let mut inflight = BinaryHeap::new();
    for _ in 0..w.qd {
        inflight.push(Reverse(issue(0, &mut rng)));
    }
    let (mut start, mut lat_sum, mut done) = (0, 0u64, 0);
    let mut now = 0;
    let mut before = None;
    while done < warm + ops {
        let Reverse((t, issued)) = inflight.pop().unwrap();
        now = t;
        done += 1;
        if done == warm {
            start = now;
            before = Some(snapshot(m, now));
        } else if done > warm {
            lat_sum += t - issued;
        }
        inflight.push(Reverse(issue(now, &mut rng)));
    }
    let secs = (now - start) as f64 / 1e9;
    Run {
        iops: ops as f64 / secs,
        latency_ns: lat_sum as f64 / ops as f64,
        before: before.unwrap_or_else(|| snapshot(m, 0)),
        after: snapshot(m, now),
    }
}

/// A random workload over the lab's 1 GiB store.
fn random_workload(bs: u64, read: f64, qd: u32) -> Workload {
    Workload {
        bs,
        read,
        random: 1.0,
        qd,
        span: 1 << 30,
        sync: false,
        streams: 1,
    }
}

fn close(what: &str, sim: f64, model: f64) {
    let ratio = sim / model;
    eprintln!("{what}: sim {sim:.1} model {model:.1} ratio {ratio:.3}");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: simulated {sim:.1}, predicted {model:.1} (ratio {ratio:.3})"
    );
}

#[test]
fn simulation_agrees_with_prediction_within_ten_percent() {
    for preset in ["array-15k", "sata-ssd"] {
        let p = params(preset);
        for (bs, read) in [(4096, 1.0), (8192, 0.7)] {
            for qd in [1, 8, 32] {
                let w = random_workload(bs, read, qd);
                let m = Model::new(preset, p.clone());
                let (iops, lat) = simulate(&m, &w, 2_000, 40_000);
                let pr = predict(&p, &w).unwrap();
                let what = format!("{preset} bs {bs} read {read} qd {qd}");
                close(&format!("{what} IOPS"), iops, pr.iops);
                close(&format!("{what} latency"), lat, pr.latency_ns);
            }
        }
    }
}

#[test]
fn spindles_pay_seek_and_rotation_only_when_random() {
    let mut p = params("array-15k");
    p.read_cache = 0;
    let m = Model::new("t", p.clone());
    let read = |offset, now| {
        let op = MediaOp {
            kind: OpKind::Read,
            offset,
            len: 4096,
            sync: false,
        };
        m.schedule(&op, now) - now
    };
    // Stripes 0, 21, 63 and 105 all live on device 0.
    let first = read(0, 0);
    assert!(first > 1_700_000, "a random 4 KiB read took {first} ns");
    let seq = read(4096, 100_000_000);
    let transfer = (4096.0 / p.transfer) as u64;
    assert!(seq <= transfer + 1, "a sequential read took {seq} ns");
    // Both queued on one device at once: the second waits for the first.
    let a = read(21 * 65536 * 3, 200_000_000);
    let b = read(21 * 65536 * 5, 200_000_000);
    assert!(b > a, "FIFO: {a} then {b}");
}

#[test]
fn a_stream_a_few_requests_out_of_order_is_still_sequential() {
    let mut p = params("raidz-sata");
    p.read_cache = 0;
    let m = Model::new("t", p.clone());
    let read = |offset: u64, now| {
        let op = MediaOp {
            kind: OpKind::Read,
            offset,
            len: 32 * 1024,
            sync: false,
        };
        m.schedule(&op, now) - now
    };
    let kib: u64 = 1024;
    let transfer = (32.0 * 1024.0 / p.transfer) as u64;
    // Position the head (a random first read), then the rest of that stripe
    // unit in 32 KiB reads arriving as a server's threads deliver a stream:
    // +64K, +32K, +96K from the unit's start, each within a stripe unit of
    // where the last one ended.
    let first = read(10 * p.stripe, 0);
    assert!(
        first > 1_000_000,
        "the first read took {first} ns: it seeks"
    );
    let mut now = 1_000_000_000;
    let base = 10 * p.stripe + 32 * kib;
    for off in [32, 0, 64] {
        let t = read(base + off * kib, now);
        assert!(
            t <= transfer + 1,
            "out-of-order stream read at +{off}K took {t} ns"
        );
        now += 1_000_000_000;
    }
    // Far from the head it seeks again.
    let far = read(base + 1000 * p.stripe * p.count as u64, now);
    assert!(far > 1_000_000, "a far read took {far} ns");
}

#[test]
fn read_cache_hits_follow_cache_over_region_touched() {
    let p = params("array-15k");
    let m = Model::new("t", p.clone());
    let span = 4 * p.read_cache;
    let mut rng = Rng::new(7);
    let (mut hits, n) = (0, 20_000);
    for i in 0..n {
        let op = MediaOp {
            kind: OpKind::Read,
            offset: rng.below(span / 4096) * 4096,
            len: 4096,
            sync: false,
        };
        let now = i * 1_000_000_000;
        if m.schedule(&op, now) - now <= p.cache_ns as u64 {
            hits += 1;
        }
    }
    let ratio = hits as f64 / n as f64;
    assert!(
        (0.2..0.3).contains(&ratio),
        "hit ratio {ratio}, expected 0.25"
    );
}

/// A SATA SSD with a 1 MiB write-back cache and no bus limit, and its figures.
fn small_cache() -> (Model, Params) {
    let mut p = params("sata-ssd");
    p.write_cache = 1 << 20;
    p.bus = None;
    (Model::new("t", p.clone()), p)
}

/// The `i`th 64 KiB write.
fn write(i: u64) -> MediaOp {
    MediaOp {
        kind: OpKind::Write,
        offset: i * 65536,
        len: 65536,
        sync: false,
    }
}

#[test]
fn write_back_cache_absorbs_a_burst_then_waits_for_destage() {
    let (m, p) = small_cache();
    // 16 writes of 64 KiB fill 1 MiB at once; the 17th waits for 64 KiB to drain.
    for i in 0..16 {
        let t = m.schedule(&write(i), 0);
        assert!(t.abs_diff(p.cache_ns as u64) <= 1, "write {i}: {t} ns");
    }
    let waited = m.schedule(&write(16), 0);
    let drain = 65536.0 / p.destage;
    assert!(
        (waited as f64 - drain - p.cache_ns).abs() < 2.0,
        "{waited} ns"
    );
    // A flush without NVRAM waits for all 17 to drain.
    let flush = MediaOp {
        kind: OpKind::Flush,
        offset: 0,
        len: 0,
        sync: false,
    };
    let f = m.schedule(&flush, 0) as f64;
    assert!((f - 17.0 * drain).abs() < 2.0, "flush at {f} ns");
}

#[test]
fn reset_empties_the_write_back_cache() {
    let (m, p) = small_cache();
    for i in 0..16 {
        m.schedule(&write(i), 0);
    }
    // Full: the next write waits for a destage...
    assert!(m.schedule(&write(16), 0) as f64 > p.cache_ns + 1.0);
    // ...until the medium is reset, when it is absorbed at once again.
    m.reset();
    let t = m.schedule(&write(17), 0);
    assert!(t.abs_diff(p.cache_ns as u64) <= 1, "after reset: {t} ns");
}

#[test]
fn sync_writes_cost_the_cache_the_log_or_the_devices() {
    let sync_write = |name: &str| {
        let p = params(name);
        let m = Model::new(name, p.clone());
        let w = Workload {
            sync: true,
            ..random_workload(8192, 0.0, 8)
        };
        // Past the first 200 MiB: the write-back cache is full (steady state).
        let (_, lat) = simulate(&m, &w, 40_000, 20_000);
        (lat, predict(&p, &w).unwrap().latency_ns)
    };
    let (nvram, _) = sync_write("array-15k");
    let (no_log, no_log_model) = sync_write("raidz-sata");
    let (log, log_model) = sync_write("raidz-sata-slog");
    assert!(nvram < 1_000_000.0, "NVRAM sync write {nvram} ns");
    assert!(no_log > 20_000_000.0, "raidz sync write {no_log} ns");
    // Study 002: the log device cut the 8 KiB sync-write latency about 4x
    // (34 ms to 8 ms); here the pool's destage rate bounds the logged case.
    assert!(no_log / log > 3.0, "{no_log} vs {log}");
    close("raidz sync latency", no_log, no_log_model);
    close("raidz-slog sync latency", log, log_model);
}

/// Drive `m` with `qd` clients each writing 8 KiB at a random offset of
/// `span` and then flushing (a synchronous write as the lab's servers make
/// it: write, then fsync), for `warm` then `ops` completions; returns (IOPS,
/// mean latency ns, max latency ns) of the write-and-flush pairs over the
/// measured part.
fn write_flush(m: &Model, qd: u32, span: u64, warm: usize, ops: usize) -> (f64, f64, f64) {
    let (iops, lat) = write_flush_latencies(m, qd, span, warm, ops);
    let mean = lat.iter().sum::<u64>() as f64 / lat.len() as f64;
    (iops, mean, lat.iter().copied().max().unwrap_or(0) as f64)
}

/// [`write_flush`]'s IOPS and every measured pair's latency (ns).
fn write_flush_latencies(
    m: &Model,
    qd: u32,
    span: u64,
    warm: usize,
    ops: usize,
) -> (f64, Vec<u64>) {
    let mut rng = Rng::new(7);
    let flush = MediaOp {
        kind: OpKind::Flush,
        offset: 0,
        len: 0,
        sync: false,
    };
    // (time, issued, flushing)
    let mut events = BinaryHeap::new();
    let write = |now: u64, rng: &mut Rng| {
        let op = MediaOp {
            kind: OpKind::Write,
            offset: rng.below(span / 8192) * 8192,
            len: 8192,
            sync: false,
        };
        Reverse((m.schedule(&op, now), now, false))
    };
    for _ in 0..qd {
        events.push(write(0, &mut rng));
    }
    let (mut start, mut done, mut now) = (0, 0, 0);
    let mut lat = Vec::with_capacity(ops);
    while done < warm + ops {
        let Reverse((t, issued, flushing)) = events.pop().unwrap();
        now = t;
        if !flushing {
            events.push(Reverse((m.schedule(&flush, now), issued, true)));
            continue;
        }
        done += 1;
        if done == warm {
            start = now;
        } else if done > warm {
            lat.push(t - issued);
        }
        events.push(write(now, &mut rng));
    }
    let secs = (now - start) as f64 / 1e9;
    (lat.len() as f64 / secs, lat)
}

#[test]
fn a_zfs_pool_blocks_writers_at_a_full_cache_until_half_is_written_out() {
    // Study 002's SQLIO on the pool with its log device: 8 outstanding
    // 8 KiB writes, each committed, long past the cache's fill.
    let blocks = params("raidz-sata-slog");
    assert!(
        blocks.full_blocks,
        "raidz-sata-slog: full_cache = \"blocks\""
    );
    let paced = Params {
        full_blocks: false,
        ..blocks.clone()
    };
    let run =
        |p: &Params| write_flush_latencies(&Model::new("t", p.clone()), 8, 1 << 30, 20_000, 40_000);
    let ((b_iops, b_lat), (p_iops, p_lat)) = (run(&blocks), run(&paced));
    let under_1ms =
        |l: &[u64]| l.iter().filter(|&&x| x < 1_000_000).count() as f64 / l.len() as f64;
    let max = |l: &[u64]| l.iter().copied().max().unwrap_or(0) as f64;
    eprintln!(
        "blocks: {b_iops:.0} IOPS, {:.0}% under 1 ms, max {:.0} ms; paced: {p_iops:.0} IOPS, \
         {:.0}% under 1 ms, max {:.0} ms",
        100.0 * under_1ms(&b_lat),
        max(&b_lat) / 1e6,
        100.0 * under_1ms(&p_lat),
        max(&p_lat) / 1e6
    );
    // The same rate: either way the destage decides...
    assert!(
        (0.9..1.1).contains(&(b_iops / p_iops)),
        "{b_iops} vs {p_iops}"
    );
    // ...but blocked, most writes pass at the log's speed and a few wait
    // for half the cache to be written out, where paced every write waits
    // its share.
    assert!(under_1ms(&b_lat) > 0.5, "{}", under_1ms(&b_lat));
    assert!(under_1ms(&p_lat) < 0.1, "{}", under_1ms(&p_lat));
    let half = blocks.write_cache as f64 / 2.0 / blocks.destage;
    assert!(
        max(&b_lat) > 0.5 * half,
        "max {} ns, half the cache {half} ns",
        max(&b_lat)
    );
    assert!(max(&p_lat) < 0.1 * half, "paced max {} ns", max(&p_lat));
}

#[test]
fn a_pool_without_a_log_device_writes_its_log_to_the_disks() {
    // Study 002's SQLIO: 2 threads x 4 outstanding 8 KiB writes, each
    // committed (here: write, then flush), past the write-back cache's fill.
    let run = |p: Params| write_flush(&Model::new("t", p), 8, 1 << 30, 40_000, 20_000);
    // Transaction groups apart (the next test).
    let pool = Params {
        txg_ns: None,
        ..params("raidz-sata")
    };
    assert!(pool.pool_log);
    let (iops, lat, _) = run(pool.clone());
    let (slog_iops, slog_lat, _) = run(params("raidz-sata-slog"));
    let (drain_iops, _, _) = run(Params {
        pool_log: false,
        ..pool.clone()
    });
    eprintln!(
        "pool log {iops:.0} IOPS {:.1} ms; log device {slog_iops:.0} IOPS {:.1} ms; \
         drain {drain_iops:.0} IOPS",
        lat / 1e6,
        slog_lat / 1e6
    );
    // Each commit is a write on a disk (seek and rotation) and one runs at
    // a time, so the rate is below what waiting for the drain gets...
    let one_disk_write = pool.device_moments(true, 8192, 1.0).0;
    assert!(lat > one_disk_write, "pool log latency {lat} ns");
    assert!(iops < 0.8 * drain_iops, "{iops} vs drain {drain_iops}");
    // ...and at most the 8 writers' worth per commit...
    let commits = 1e9 / one_disk_write;
    assert!(iops < 1.1 * 8.0 * commits, "{iops} vs {commits} commits/s");
    // ...yet writers waiting for a commit share the next one.
    assert!(iops > 2.0 * commits, "{iops} vs {commits} commits/s");
    // The log device's gain (study 002: 3.8x; see docs/studies.md for what
    // the model leaves out).
    assert!(slog_iops > 1.2 * iops, "{slog_iops} vs {iops}");
}

#[test]
fn transaction_groups_stall_the_pools_commits_while_they_are_written() {
    let run = |p: Params| write_flush(&Model::new("t", p), 8, 1 << 30, 4_000, 6_000);
    let with = params("raidz-sata");
    let interval = with.txg_ns.expect("raidz-sata has transaction groups");
    let (iops, lat, max) = run(with.clone());
    let (free_iops, free_lat, free_max) = run(Params {
        txg_ns: None,
        ..with.clone()
    });
    eprintln!(
        "txg: {iops:.0} IOPS, mean {:.1} ms, max {:.0} ms; without: {free_iops:.0} IOPS, \
         mean {:.1} ms, max {:.0} ms",
        lat / 1e6,
        max / 1e6,
        free_lat / 1e6,
        free_max / 1e6
    );
    // A group of `interval` at the free rate, written at the destage rate,
    // stalls the commits behind it: some wait far longer than any commit...
    // Each random 8 KiB write costs the group a whole record.
    let per_write = with.destage_bytes_mean(8192, 1.0);
    assert_eq!(per_write, with.record.unwrap() as f64);
    let group_write = free_iops * interval / 1e9 * per_write / with.destage;
    assert!(
        max > 0.5 * group_write,
        "max {max} ns, a group takes {group_write} ns"
    );
    assert!(max > 20.0 * free_max.max(1.0) / 2.0, "{max} vs {free_max}");
    // ...and the rate falls by about the time the pool spends writing them.
    let expect = free_iops * interval / (interval + group_write);
    assert!(
        (0.7..1.3).contains(&(iops / expect)),
        "{iops} IOPS, expected about {expect}"
    );
}

#[test]
fn a_random_write_costs_the_destage_every_record_it_touches() {
    let p = params("raidz-sata");
    let record = p.record.expect("raidz-sata has ZFS's records");
    // Exact: a random write inside one record costs the record, across a
    // boundary two; a sequential one its own length.
    assert_eq!(p.destage_bytes(0, 8192, false), record);
    assert_eq!(p.destage_bytes(record - 4096, 8192, false), 2 * record);
    assert_eq!(p.destage_bytes(record - 4096, 8192, true), 8192);
    assert_eq!(p.destage_bytes(0, 3 * record, false), 3 * record);
    // The mean over offsets that are multiples of the size is what the
    // exact rule gives, averaged over one period of both.
    for bs in [512, 4096, 8192, 96 << 10, 128 << 10, 192 << 10, 1 << 20] {
        let period = bs * record / super::params::gcd(bs, record) / bs;
        let sum: u64 = (0..period)
            .map(|k| p.destage_bytes(k * bs, bs, false))
            .sum();
        let exact = sum as f64 / period as f64;
        let mean = p.destage_bytes_mean(bs, 1.0);
        assert!(
            (mean - exact).abs() < 1e-6,
            "bs {bs}: mean {mean}, exact {exact}"
        );
        assert_eq!(
            p.destage_bytes_mean(bs, 0.0),
            bs as f64,
            "bs {bs} sequential"
        );
    }
    // WAFL's 4 KiB blocks: from 4 KiB up a random write costs its own size.
    let wafl = params("array-15k");
    assert_eq!(wafl.destage_bytes_mean(8192, 1.0), 8192.0);
    assert_eq!(wafl.destage_bytes_mean(512, 1.0), 4096.0);
}

#[test]
fn random_writes_drain_slower_than_sequential_ones_by_record_over_size() {
    // Writes the cache accepts (not synchronous), past the cache's fill:
    // the destage bounds them. Paced: blocked writers (the preset's
    // full_cache) pass in bursts of half a cache, which a window of 20,000
    // sequential writes would cut at any phase (the rate over whole cycles
    // is the same: a_zfs_pool_blocks_writers_...).
    let p = Params {
        full_blocks: false,
        ..params("raidz-sata-slog")
    };
    let record = p.record.unwrap() as f64;
    let run = |random: f64| {
        let w = Workload {
            random,
            ..random_workload(8192, 0.0, 8)
        };
        let m = Model::new("t", p.clone());
        let (iops, lat) = simulate(&m, &w, 40_000, 20_000);
        let pr = predict(&p, &w).unwrap();
        close(&format!("random {random} IOPS"), iops, pr.iops);
        close(&format!("random {random} latency"), lat, pr.latency_ns);
        (iops, pr.iops)
    };
    let (rand_sim, rand_model) = run(1.0);
    let (seq_sim, seq_model) = run(0.0);
    let derived = record / 8192.0;
    for (what, ratio) in [
        ("simulated", seq_sim / rand_sim),
        ("predicted", seq_model / rand_model),
    ] {
        assert!(
            (ratio / derived - 1.0).abs() < 0.05,
            "{what}: sequential / random IOPS {ratio:.2}, record / size {derived}"
        );
    }
    // Random 8 KiB writes drain at the sequential rate x 8 KiB / record.
    let drained = rand_sim * 8192.0 / 1e9;
    let expect = p.destage * 8192.0 / record;
    assert!(
        (drained / expect - 1.0).abs() < 0.05,
        "{drained} bytes/ns drained, expected {expect}"
    );
}

#[test]
fn the_counters_say_how_busy_each_station_was() {
    for (preset, qd) in [("array-15k", 1), ("array-15k", 32), ("raidz-sata", 32)] {
        let p = params(preset);
        let m = Model::new(preset, p.clone());
        let w = random_workload(4096, 1.0, qd);
        let (warm, ops) = (2_000, 20_000);
        let r = run_closed(&m, &w, warm, ops);
        // Every operation issued was counted, and each read hit or missed.
        let c = &r.after.counters;
        assert_eq!(
            c.reads,
            (warm + ops) as u64 + u64::from(qd),
            "{preset} QD {qd}"
        );
        assert_eq!(c.read_hits + c.read_misses, c.reads);
        assert_eq!(c.read_bytes, 4096 * c.reads);
        assert_eq!((c.writes, c.flushes, c.dirty_bytes), (0, 0, 0));
        // The utilization law: the devices' busy share is the misses' rate
        // times a miss's mean service, over the devices.
        let s = r.after.since(&r.before).unwrap();
        let misses = s.read_misses as f64 / s.reads as f64;
        let service = p.device_moments(false, 4096, 1.0).0;
        let expect = r.iops * misses * service / 1e9 / p.count as f64;
        let busy = s.busy(stats::DEVICES).unwrap();
        eprintln!("{preset} QD {qd}: devices {busy:.3} busy, expected {expect:.3}");
        assert!(
            (busy / expect - 1.0).abs() < 0.03,
            "{preset} QD {qd}: devices {busy} busy, the utilization law says {expect}"
        );
        assert_eq!(s.busiest().unwrap().name, stats::DEVICES);
    }
    // Two disks under 32 outstanding reads are saturated.
    let p = params("raidz-sata");
    let m = Model::new("t", p);
    let r = run_closed(&m, &random_workload(4096, 1.0, 32), 2_000, 20_000);
    let busy = r
        .after
        .since(&r.before)
        .unwrap()
        .busy(stats::DEVICES)
        .unwrap();
    assert!(busy > 0.9, "raidz-sata QD 32: devices {busy} busy");
}

#[test]
fn writes_past_the_cache_keep_the_destage_busy_and_the_cache_full() {
    // Paced: each write waits for room for its own bytes (blocked, the
    // cache swings between half and full).
    let p = Params {
        full_blocks: false,
        ..params("raidz-sata-slog")
    };
    let m = Model::new("t", p.clone());
    let r = run_closed(&m, &random_workload(8192, 0.0, 8), 20_000, 10_000);
    let s = r.after.since(&r.before).unwrap();
    let destage = s.busy(stats::DESTAGE).unwrap();
    assert!(destage > 0.98, "destage {destage} busy: {s:?}");
    assert_eq!(s.busiest().unwrap().name, stats::DESTAGE);
    // The writes went to the cache, none to the disks or the log.
    assert_eq!(s.busy(stats::DEVICES), Some(0.0));
    assert_eq!(s.busy(stats::LOG), Some(0.0));
    // Issued in the window: the write after each of its 10,000 completions
    // and the one after the warm-up's last.
    assert_eq!((s.writes, s.sync_writes), (10_001, 0));
    let full = s.dirty_bytes as f64 / p.write_cache as f64;
    assert!(full > 0.99, "the cache {full} full");
    // A reset clears every counter.
    m.reset();
    let c = m.counters(r.after.at_ns).unwrap();
    assert!(c.stations.iter().all(|s| s.busy_ns == 0), "{c:?}");
    assert_eq!((c.writes, c.write_bytes, c.dirty_bytes), (0, 0, 0));
}

/// Drive `m` with `streams` sequential readers of `bs` bytes, each in its
/// own slice of `span`, `qd` reads in flight dealt round robin to them, for
/// `warm` then `ops` completions; returns (IOPS, mean latency ns) over the
/// measured part.
fn read_streams(
    m: &Model,
    bs: u64,
    qd: u32,
    streams: u32,
    span: u64,
    ops: (usize, usize),
) -> (f64, f64) {
    let (warm, ops) = ops;
    let slice = span / u64::from(streams) / bs * bs;
    let mut next: Vec<u64> = (0..u64::from(streams)).map(|s| s * slice).collect();
    let mut issue = |stream: usize, now: u64| {
        let offset = next[stream];
        let base = stream as u64 * slice;
        next[stream] = base + (offset - base + bs) % slice;
        let op = MediaOp {
            kind: OpKind::Read,
            offset,
            len: bs as u32,
            sync: false,
        };
        Reverse((m.schedule(&op, now), now, stream))
    };
    let mut inflight = BinaryHeap::new();
    for k in 0..qd {
        inflight.push(issue((k % streams) as usize, 0));
    }
    let (mut start, mut lat_sum, mut done, mut now) = (0, 0u64, 0, 0);
    while done < warm + ops {
        let Reverse((t, issued, stream)) = inflight.pop().unwrap();
        now = t;
        done += 1;
        if done == warm {
            start = now;
        } else if done > warm {
            lat_sum += t - issued;
        }
        inflight.push(issue(stream, now));
    }
    let secs = (now - start) as f64 / 1e9;
    (ops as f64 / secs, lat_sum as f64 / ops as f64)
}

/// A sequential read workload of `streams` streams.
fn sequential(bs: u64, qd: u32, streams: u32) -> Workload {
    Workload {
        random: 0.0,
        streams,
        ..random_workload(bs, 1.0, qd)
    }
}

#[test]
fn a_sequential_stream_reads_at_cache_speed_once_the_read_ahead_runs_ahead() {
    for (preset, bs) in [("x4500-raidz", 64 << 10), ("raidz-sata", 64 << 10)] {
        let p = params(preset);
        let ra = p.readahead.expect("a ZFS preset has zfetch's read-ahead");
        let run = |p: &Params, qd| {
            read_streams(
                &Model::new(preset, p.clone()),
                bs,
                qd,
                1,
                1 << 30,
                (2_000, 20_000),
            )
        };
        let (iops, lat) = run(&p, 1);
        // The devices stream at their transfer rate (no positioning once
        // the head is on the stream), the reader at the cache's speed: the
        // slower of the two.
        let devices = p.transfer * p.count as f64 * 1e9 / bs as f64;
        let cache = 1e9 / p.cache_ns;
        let expect = devices.min(cache);
        eprintln!(
            "{preset} QD1 {bs}: {iops:.0} IOPS, {:.1} µs; devices {devices:.0}, cache {cache:.0}",
            lat / 1e3
        );
        assert!(
            (iops / expect - 1.0).abs() < 0.1,
            "{preset}: {iops} IOPS, expected about {expect}"
        );
        // Without it, each read waits for its own device read.
        let (alone, _) = run(
            &Params {
                readahead: None,
                ..p.clone()
            },
            1,
        );
        assert!(
            iops > 1.5 * alone,
            "{preset}: {iops} with read-ahead, {alone} without"
        );
        // And far above a positioning per request.
        let positioned = 1e9 / p.device_moments(false, bs, 1.0).0;
        assert!(iops > 10.0 * positioned, "{preset}: {iops} vs {positioned}");
        assert!(ra.chunk <= ra.distance);
        for qd in [1, 4] {
            let w = sequential(bs, qd, 1);
            let (iops, lat) = run(&p, qd);
            let pr = predict(&p, &w).unwrap();
            close(&format!("{preset} seq QD {qd} IOPS"), iops, pr.iops);
            close(&format!("{preset} seq QD {qd} latency"), lat, pr.latency_ns);
        }
    }
}

#[test]
fn interleaved_sequential_streams_approach_the_devices_aggregate_rate() {
    let p = params("array-15k");
    // Streams long enough not to wrap in the run (one that does starts its
    // read-ahead again, having fetched past its slice's end).
    let (bs, streams, qd) = (1u64 << 20, 12, 48);
    let run = |p: &Params| {
        read_streams(
            &Model::new("t", p.clone()),
            bs,
            qd,
            streams,
            16 << 30,
            (2_000, 10_000),
        )
    };
    let (iops, lat) = run(&p);
    let rate = iops * bs as f64 / 1e9;
    let aggregate = p.transfer * p.count as f64;
    let (alone, _) = run(&Params {
        readahead: None,
        ..p.clone()
    });
    eprintln!(
        "array-15k 12 streams: {:.0} MB/s with read-ahead, {:.0} without, devices {:.0}",
        rate * 1e3,
        alone * bs as f64 / 1e6,
        aggregate * 1e3
    );
    // One positioning per read-ahead read's share rather than per 64 KiB
    // stripe unit: more than half the spindles' streaming rate, several
    // times what seeking between the streams gives.
    assert!(rate > 0.5 * aggregate, "{rate} of {aggregate} bytes/ns");
    assert!(iops > 4.0 * alone, "{iops} vs {alone} IOPS");
    let pr = predict(&p, &sequential(bs, qd, streams)).unwrap();
    close("array-15k 12 streams IOPS", iops, pr.iops);
    close("array-15k 12 streams latency", lat, pr.latency_ns);
    // One stream alone streams without positioning at all.
    let one = predict(&p, &sequential(bs, 4, 1)).unwrap();
    assert!(one.iops > pr.iops, "{one:?} vs {pr:?}");
}

#[test]
fn random_reads_are_unchanged_by_the_read_ahead() {
    for preset in ["array-15k", "raidz-sata", "x4500-raidz"] {
        let p = params(preset);
        assert!(p.readahead.is_some(), "{preset}");
        for qd in [1, 32] {
            let w = random_workload(4096, 1.0, qd);
            let with = simulate(&Model::new(preset, p.clone()), &w, 2_000, 20_000);
            let without = simulate(
                &Model::new(
                    preset,
                    Params {
                        readahead: None,
                        ..p.clone()
                    },
                ),
                &w,
                2_000,
                20_000,
            );
            eprintln!(
                "{preset} random QD {qd}: {:.0} vs {:.0} IOPS",
                with.0, without.0
            );
            assert!(
                (with.0 / without.0 - 1.0).abs() < 0.02,
                "{preset} QD {qd}: {with:?} vs {without:?}"
            );
            let pw = predict(&p, &w).unwrap();
            let pn = predict(
                &Params {
                    readahead: None,
                    ..p.clone()
                },
                &w,
            )
            .unwrap();
            assert_eq!(pw, pn, "{preset} QD {qd}");
        }
    }
}
