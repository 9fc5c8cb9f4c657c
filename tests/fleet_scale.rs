//! Controller-side cost of one fleet interval from 1,000 agents (issue 4)
//! and from 10,000 (issue 26, [`ten_thousand_agents_through_run_hosts`]).
//!
//! Ignored by default (they allocate a few hundred MB and take seconds):
//!
//! ```text
//! cargo test --release --test fleet_scale -- --ignored --nocapture
//! ```
//!
//! The first test below is the one of issue 4:
//! The merger of `src/engine/runner/merge.rs` is private, so this times the
//! public pieces the controller's per-interval work is made of, in the order
//! `aggregate::run_hosts` and `remote::poll` do it:
//!
//! 1. decode: each agent's `/v1/intervals` reply body (JSON) into
//!    `wire::IntervalsReply`, then `HostInterval::from(WireInterval)` (in the
//!    controller this runs on one poll thread per agent, so in parallel);
//! 2. merge: for each host, every worker's snapshot added into that worker's
//!    measured total (`per_worker[w] += s`), the host snapshot added into the
//!    fleet interval's accumulator (`acc += &stats`, what the merger's `add`
//!    closure does) and its CPU sample pushed; then the fleet interval's
//!    percentiles (what the progress line and the summary read).
//!
//! Every host ships 16 workers; each worker snapshot has a few hundred latency
//! buckets per direction (randread-like reads plus some writes), the host
//! snapshot is their sum.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant;
use storlab::fleet::wire::{IntervalsReply, WireInterval};
use storlab::runner::HostInterval;
use storlab::runner::{
    HostCheck, HostEvent, HostLoss, HostPlan, HostPrepared, HostRunner, Observer, RunError,
};
use storlab::stats::{CpuSample, Recorder, Snapshot};
use storlab::workload::Dir;

const HOSTS: usize = 1000;
const WORKERS_PER_HOST: usize = 16;
const ROUNDS: usize = 3;

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A latency log-uniform over `[lo_ns, lo_ns * 2^octaves)`.
fn lat(rng: &mut u64, lo_ns: f64, octaves: f64) -> u64 {
    let u = (splitmix(rng) >> 11) as f64 / (1u64 << 53) as f64;
    (lo_ns * (u * octaves).exp2()) as u64
}

/// One worker's interval: reads spread over ~2.5 octaves from 40 µs, writes
/// over ~2.5 octaves from 90 µs, plus a thin tail to 20 ms (a few hundred
/// buckets per direction at 8 sub-bucket bits).
fn worker_snapshot(seed: u64) -> Snapshot {
    let mut rng = seed;
    let mut r = Recorder::new();
    for _ in 0..3000 {
        r.record(Dir::Read, 4096, lat(&mut rng, 40_000.0, 2.5));
    }
    for _ in 0..1200 {
        r.record(Dir::Write, 4096, lat(&mut rng, 90_000.0, 2.5));
    }
    for _ in 0..40 {
        r.record(Dir::Read, 4096, lat(&mut rng, 1_000_000.0, 4.3));
        r.record(Dir::Write, 4096, lat(&mut rng, 1_000_000.0, 4.3));
    }
    r.take()
}

fn buckets(s: &Snapshot) -> (usize, usize) {
    (s.read.lat.iter().count(), s.write.lat.iter().count())
}

/// What agent `host` answers to one long poll: one interval.
fn reply_body(host: usize, index: u32, templates: &[Snapshot]) -> String {
    let mut stats = Snapshot::default();
    let mut workers = Vec::with_capacity(WORKERS_PER_HOST);
    for k in 0..WORKERS_PER_HOST {
        let w = host * WORKERS_PER_HOST + k;
        let s = templates[(w * 7 + index as usize) % templates.len()].clone();
        stats += &s;
        workers.push((w as u32, s));
    }
    let hi = HostInterval {
        index,
        end_ns: (index as u64 + 1) * 1_000_000_000,
        stats,
        workers,
        cpu: CpuSample {
            proc_user_s: 0.4,
            proc_sys_s: 0.9,
            host_busy_pct: 70.0,
            cores: 16,
            ctx: 0,
        },
    };
    serde_json::to_string(&IntervalsReply {
        run: 1,
        intervals: vec![WireInterval::from(&hi)],
        done: false,
        error: None,
        workers: Vec::new(),
        verify_maps: Vec::new(),
        verify_map_error: None,
        verify_bad: Vec::new(),
        verify_journals: Vec::new(),
        verify_journal_error: None,
    })
    .unwrap()
}

#[test]
#[ignore = "benchmark: cargo test --release --test fleet_scale -- --ignored --nocapture"]
fn merge_one_interval_from_1000_agents() {
    let t = Instant::now();
    let templates: Vec<Snapshot> = (0..64).map(|i| worker_snapshot(i * 7919 + 1)).collect();
    let (wr, ww) = buckets(&templates[0]);
    let bodies: Vec<String> = (0..HOSTS).map(|h| reply_body(h, 0, &templates)).collect();
    let total_bytes: usize = bodies.iter().map(|b| b.len()).sum();
    println!(
        "setup {:.2} s: {HOSTS} agents x {WORKERS_PER_HOST} workers; worker snapshot \
         {wr} read + {ww} write buckets; one reply {:.0} KiB, all {:.1} MiB",
        t.elapsed().as_secs_f64(),
        bodies[0].len() as f64 / 1024.0,
        total_bytes as f64 / (1 << 20) as f64
    );

    // The same replies without the per-worker snapshots: what the host
    // snapshot alone costs to decode.
    let slim: Vec<String> = bodies
        .iter()
        .map(|b| {
            let mut r: IntervalsReply = serde_json::from_str(b).unwrap();
            r.intervals[0].workers.clear();
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    let t = Instant::now();
    for b in &slim {
        let r: IntervalsReply = serde_json::from_str(b).unwrap();
        std::hint::black_box(r);
    }
    println!(
        "decode without per-worker snapshots: {:.1} ms for {:.1} MiB",
        t.elapsed().as_secs_f64() * 1e3,
        slim.iter().map(|b| b.len()).sum::<usize>() as f64 / (1 << 20) as f64
    );
    drop(slim);

    let nworkers = HOSTS * WORKERS_PER_HOST;
    // The run's measured per-worker totals, already holding earlier intervals
    // (so every `+=` is a real merge, not a clone into an empty histogram).
    let warm: Vec<Snapshot> = (0..nworkers)
        .map(|w| templates[(w * 3) % templates.len()].clone())
        .collect();

    let mut best = (f64::MAX, f64::MAX, f64::MAX);
    for round in 0..ROUNDS {
        // 1. decode, as each poll thread does.
        let t = Instant::now();
        let intervals: Vec<HostInterval> = bodies
            .iter()
            .map(|b| {
                let r: IntervalsReply = serde_json::from_str(b).unwrap();
                r.intervals.into_iter().next().unwrap().into()
            })
            .collect();
        let decode = t.elapsed().as_secs_f64();

        // 2. merge, as the aggregator does on its one thread.
        let mut per_worker = warm.clone();
        let t = Instant::now();
        let mut pending: BTreeMap<u32, ((Snapshot, Vec<CpuSample>), u64)> = BTreeMap::new();
        let mut host_series: Vec<Vec<(u32, Snapshot)>> = vec![Vec::new(); HOSTS];
        for (host, iv) in intervals.into_iter().enumerate() {
            let HostInterval {
                index,
                end_ns,
                stats,
                workers,
                cpu,
            } = iv;
            for (w, s) in &workers {
                per_worker[*w as usize] += s;
            }
            let entry = pending
                .entry(index)
                .or_insert_with(|| (Default::default(), 0));
            entry.0.0 += &stats;
            entry.0.1.push(cpu);
            entry.1 = entry.1.max(end_ns);
            host_series[host].push((index, stats));
        }
        let ((fleet, cpus), _end) = pending.remove(&0).unwrap();
        let p99 = fleet.read.lat.percentile(99.0);
        let p50 = fleet.read.lat.percentile(50.0);
        let merge = t.elapsed().as_secs_f64();
        let (fr, fw) = buckets(&fleet);
        assert_eq!(cpus.len(), HOSTS);
        assert_eq!(
            fleet.total_ios(),
            per_worker.iter().map(|s| s.total_ios()).sum::<u64>()
                - warm.iter().map(|s| s.total_ios()).sum::<u64>()
        );
        println!(
            "round {round}: decode {:.1} ms ({:.0} MB/s), merge {:.1} ms \
             (fleet {fr} + {fw} buckets, read p50 {p50} ns p99 {p99} ns), total {:.1} ms",
            decode * 1e3,
            total_bytes as f64 / decode / 1e6,
            merge * 1e3,
            (decode + merge) * 1e3
        );
        best.0 = best.0.min(decode);
        best.1 = best.1.min(merge);
        best.2 = best.2.min(decode + merge);
        drop(host_series);
    }
    println!(
        "best of {ROUNDS}: one interval from {HOSTS} agents: decode {:.1} ms (serial; \
         spread over {HOSTS} poll threads in the controller), merge {:.1} ms, total {:.1} ms",
        best.0 * 1e3,
        best.1 * 1e3,
        best.2 * 1e3
    );
    if best.2 >= 1.0 {
        println!(
            "OVER TARGET: decode + merge of one interval costs {:.2} CPU-s, about the \
             whole 1 s interval (the per-worker snapshots dominate the decode)",
            best.2
        );
    }
    // The aggregator's own thread must keep up with 1 s intervals.
    assert!(
        best.1 < 1.0,
        "merging one interval from {HOSTS} agents took {:.2} s",
        best.1
    );
}

// ---------------------------------------------------------------------------
// 10,000 agents through the controller's own aggregator (issue 26).
//
// Each simulated agent is a `HostRunner` in this process whose intervals
// arrive as the JSON bodies a real agent sends (`/v1/intervals`), decoded the
// way `remote::poll` decodes them (`IntervalsReply`, then `HostInterval::from`)
// on one thread per core, as the controller's poll threads spread over the
// cores; `runner::run_hosts` checks, prepares and starts them all and merges
// their intervals with its `Merger` (src/runner/merge.rs) and `Collector`, as
// for any fleet. Timed, per interval: from the first agent's interval handed
// to the aggregator until the merged interval reaches the observer; once with
// every reply decoded beforehand (the aggregator's merge alone), once decoding
// as they are handed over (decode + merge). Measured beside it: the memory
// per agent (VmHWM over the run, VmRSS holding the result), and what a real
// `RemoteRunner` and its poll thread add per agent.

/// `KEY` from the environment, else `default`.
fn env_or(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The process's resident memory now and at its peak, bytes (/proc/self/status).
fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = |key: &str| -> u64 {
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
            * 1024
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

/// Start counting the peak again from now (Linux: "5" > clear_refs).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

/// Decode one agent's `/v1/intervals` reply as the controller's poll thread does.
fn decode(body: &str) -> HostInterval {
    let r: IntervalsReply = serde_json::from_str(body).unwrap();
    r.intervals.into_iter().next().unwrap().into()
}

/// The agents one feeding thread hands over: index, event channel, and the
/// intervals decoded beforehand (if so).
type Slice = Vec<(usize, Sender<HostEvent>, Option<Vec<HostInterval>>)>;

/// The agents' replies and what the aggregator got from them.
struct Feed {
    /// Each agent's interval reply bodies, `[agent][interval]`.
    bodies: Vec<Vec<String>>,
    /// The same replies decoded beforehand, when the merge alone is timed.
    decoded: Mutex<Option<Vec<Vec<HostInterval>>>>,
    /// Each agent's event channel, once started.
    senders: Mutex<Vec<Option<Sender<HostEvent>>>>,
    started: AtomicUsize,
    /// When each interval's first agent reply went to the aggregator.
    first_sent: Mutex<Vec<Option<Instant>>>,
    /// How many fleet intervals are final (the observer counts them).
    finals: Arc<(Mutex<usize>, std::sync::Condvar)>,
    threads: usize,
}

impl Feed {
    /// Hand every agent's intervals to the aggregator on `threads` threads,
    /// interval by interval (each decoded just before, unless decoded
    /// beforehand), then every agent's end.
    fn run(self: Arc<Self>) {
        let senders: Vec<Option<Sender<HostEvent>>> =
            std::mem::take(&mut *self.senders.lock().unwrap());
        let mut decoded = self.decoded.lock().unwrap().take();
        let n = senders.len();
        let chunk = n.div_ceil(self.threads);
        let mut slices: Vec<Slice> = Vec::new();
        for (i, s) in senders.into_iter().enumerate() {
            if i % chunk == 0 {
                slices.push(Vec::new());
            }
            let pre = decoded.as_mut().map(|d| std::mem::take(&mut d[i]));
            slices
                .last_mut()
                .unwrap()
                .push((i, s.expect("every agent started"), pre));
        }
        let intervals = self.bodies[0].len();
        let barrier = Arc::new(std::sync::Barrier::new(slices.len()));
        for mut slice in slices {
            let feed = Arc::clone(&self);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                for k in 0..intervals {
                    // Interval k is handed over once k - 1 is final, as a
                    // second apart: no backlog of the one before in its time.
                    let (count, cv) = &*feed.finals;
                    let mut done = count.lock().unwrap();
                    while *done < k {
                        done = cv.wait(done).unwrap();
                    }
                    drop(done);
                    barrier.wait();
                    for (host, tx, pre) in &mut slice {
                        let iv = match pre {
                            Some(p) => std::mem::take(&mut p[k]),
                            None => decode(&feed.bodies[*host][k]),
                        };
                        feed.first_sent.lock().unwrap()[k].get_or_insert_with(Instant::now);
                        let _ = tx.send(HostEvent::Interval {
                            host: *host,
                            interval: Box::new(iv),
                        });
                    }
                }
                for (host, tx, _) in slice {
                    let _ = tx.send(HostEvent::Done {
                        host,
                        error: None,
                        workers: None,
                        verify: None,
                    });
                }
            });
        }
    }
}

/// One simulated agent.
struct SimAgent {
    name: String,
    feed: Arc<Feed>,
}

impl HostRunner for SimAgent {
    fn name(&self) -> &str {
        &self.name
    }
    fn check(&mut self, _plan: &HostPlan) -> Result<HostCheck, RunError> {
        Ok(HostCheck {
            clock_offset_ns: 0,
            version: "sim".into(),
        })
    }
    fn prepare(
        &mut self,
        _plan: &HostPlan,
        _stop: &std::sync::atomic::AtomicBool,
    ) -> Result<HostPrepared, RunError> {
        Ok(HostPrepared {
            backend: "sim".into(),
            threads: 1,
            prepared: Vec::new(),
            notes: Vec::new(),
        })
    }
    fn lead(&self) -> Duration {
        Duration::ZERO
    }
    fn start(&mut self, _at: u64, host: usize, events: Sender<HostEvent>) -> Result<(), RunError> {
        self.feed.senders.lock().unwrap()[host] = Some(events);
        let n = self.feed.bodies.len();
        if self.feed.started.fetch_add(1, Ordering::SeqCst) + 1 == n {
            Arc::clone(&self.feed).run();
        }
        Ok(())
    }
    fn stop(&mut self) {}
    fn finish(&mut self) {}
}

/// When each fleet interval became final, and its I/Os; tells the feed.
struct Final(Vec<(Instant, u64)>, Arc<(Mutex<usize>, std::sync::Condvar)>);

impl Observer for Final {
    fn interval(
        &mut self,
        _spec: &storlab::workload::Spec,
        rec: &storlab::model::IntervalRecord,
        _n: u32,
    ) {
        self.0.push((Instant::now(), rec.stats.total_ios()));
        *self.1.0.lock().unwrap() += 1;
        self.1.1.notify_all();
    }
}

/// One agent's `/v1/intervals` reply for interval `index`, `workers` workers.
fn agent_reply(host: usize, index: u32, workers: usize, templates: &[Snapshot]) -> String {
    let mut stats = Snapshot::default();
    let mut ws = Vec::with_capacity(workers);
    for k in 0..workers {
        let w = host * workers + k;
        let s = templates[(w * 7 + index as usize) % templates.len()].clone();
        stats += &s;
        ws.push((w as u32, s));
    }
    let hi = HostInterval {
        index,
        end_ns: (index as u64 + 1) * 1_000_000_000,
        stats,
        workers: ws,
        cpu: CpuSample {
            proc_user_s: 0.1,
            proc_sys_s: 0.2,
            host_busy_pct: 30.0,
            cores: 2,
            ctx: 0,
        },
    };
    serde_json::to_string(&IntervalsReply {
        run: 1,
        intervals: vec![WireInterval::from(&hi)],
        done: false,
        error: None,
        workers: Vec::new(),
        verify_maps: Vec::new(),
        verify_map_error: None,
        verify_bad: Vec::new(),
        verify_journals: Vec::new(),
        verify_journal_error: None,
    })
    .unwrap()
}

/// What one run of the point over the simulated agents gave.
struct Measured {
    /// Per interval: first reply handed over -> merged interval final, s.
    latency: Vec<f64>,
    /// The whole `run_hosts`, s.
    whole: f64,
    /// Bytes over the baseline: at the peak, and held with the result.
    peak: u64,
    held: u64,
}

/// Run one point of `intervals` 1 s intervals over `bodies.len()` simulated
/// agents through `run_hosts`; check the merged intervals are the sums.
fn run_fleet(
    bodies: Vec<Vec<String>>,
    workers: usize,
    predecode: bool,
    threads: usize,
) -> Measured {
    let agents = bodies.len();
    let intervals = bodies[0].len();
    let want: Vec<u64> = (0..intervals)
        .map(|k| bodies.iter().map(|b| decode(&b[k]).stats.total_ios()).sum())
        .collect();
    let mut spec = storlab::workload::jobfile::job_from_settings(
        "scale",
        &storlab::workload::jobfile::Settings::default(),
    )
    .points
    .remove(0);
    spec.groups[0].vms = agents as u32;
    spec.groups[0].workers_per_vm = workers as u32;
    spec.ramp = Duration::ZERO;
    spec.runtime = Duration::from_secs(intervals as u64);
    spec.interval = Duration::from_secs(1);
    let decoded = predecode.then(|| {
        bodies
            .iter()
            .map(|b| b.iter().map(|x| decode(x)).collect())
            .collect()
    });
    let feed = Arc::new(Feed {
        bodies,
        decoded: Mutex::new(decoded),
        senders: Mutex::new((0..agents).map(|_| None).collect()),
        started: AtomicUsize::new(0),
        first_sent: Mutex::new(vec![None; intervals]),
        finals: Arc::new((Mutex::new(0), std::sync::Condvar::new())),
        threads,
    });
    let plans: Vec<HostPlan> = (0..agents)
        .map(|h| HostPlan {
            spec: spec.clone(),
            vms: vec![h as u32],
            targets: vec![storlab::target::Target::parse("null:").unwrap()],
            threads: Some(1),
            allow_overwrite: false,
            lab_store: false,
        })
        .collect();
    let mut hosts: Vec<Box<dyn HostRunner>> = (0..agents)
        .map(|h| {
            Box::new(SimAgent {
                name: format!("10.{}.{}.{}:7878", h >> 16, (h >> 8) & 255, h & 255),
                feed: Arc::clone(&feed),
            }) as Box<dyn HostRunner>
        })
        .collect();
    let (before, _) = rss();
    reset_peak();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut fin = Final(Vec::new(), Arc::clone(&feed.finals));
    let t = Instant::now();
    let point = storlab::runner::run_hosts(
        &spec,
        &mut hosts,
        &plans,
        HostLoss::Stop,
        &stop,
        None,
        &mut fin,
    )
    .expect("the point runs");
    let whole = t.elapsed().as_secs_f64();
    let (held, peak) = rss();
    assert_eq!(point.hosts.len(), agents);
    assert!(point.error.is_none(), "{:?}", point.error);
    assert_eq!(point.intervals.len(), intervals, "every interval merged");
    assert_eq!(fin.0.len(), intervals);
    for (k, rec) in point.intervals.iter().enumerate() {
        assert_eq!(
            rec.stats.total_ios(),
            want[k],
            "interval {k} is the sum of every agent's"
        );
        assert_eq!(fin.0[k].1, want[k]);
        assert_eq!(rec.cpu.cores as usize, 2 * agents);
    }
    let first = feed.first_sent.lock().unwrap().clone();
    let latency = first
        .iter()
        .zip(&fin.0)
        .map(|(f, (t, _))| t.duration_since(f.expect("handed over")).as_secs_f64())
        .collect();
    drop(point);
    Measured {
        latency,
        whole,
        peak: peak.saturating_sub(before),
        held: held.saturating_sub(before),
    }
}

#[test]
#[ignore = "benchmark: cargo test --release --test fleet_scale -- --ignored --nocapture"]
fn ten_thousand_agents_through_run_hosts() {
    let agents = env_or("STORLAB_SCALE_AGENTS", 10_000);
    let workers = env_or("STORLAB_SCALE_WORKERS", 4);
    let intervals = env_or("STORLAB_SCALE_INTERVALS", 3);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let kib = |b: u64, per: usize| b as f64 / per as f64 / 1024.0;

    // What a real RemoteRunner (its HTTP client) and its poll thread add per
    // agent, measured first, on a heap with nothing freed yet to reuse.
    let (before, _) = rss();
    let runners: Vec<storlab::fleet::remote::RemoteRunner> = (0..agents)
        .map(|h| {
            storlab::fleet::remote::RemoteRunner::new(
                &format!("10.0.{}.{}:7878", h >> 8, h & 255),
                "0123456789abcdef",
            )
        })
        .collect();
    let (with_runners, _) = rss();
    let gate = Arc::new(std::sync::Barrier::new(agents + 1));
    let parked: Vec<_> = (0..agents)
        .map(|_| {
            let g = Arc::clone(&gate);
            std::thread::spawn(move || {
                g.wait();
            })
        })
        .collect();
    let (with_threads, _) = rss();
    gate.wait();
    for p in parked {
        p.join().unwrap();
    }
    drop(runners);
    println!(
        "per agent, beside the aggregator: a RemoteRunner {:.2} KiB, an idle poll thread {:.1} KiB resident",
        kib(with_runners.saturating_sub(before), agents),
        kib(with_threads.saturating_sub(with_runners), agents)
    );

    let templates: Vec<Snapshot> = (0..64).map(|i| worker_snapshot(i * 7919 + 1)).collect();
    let bodies: Vec<Vec<String>> = (0..agents)
        .map(|h| {
            (0..intervals as u32)
                .map(|k| agent_reply(h, k, workers, &templates))
                .collect()
        })
        .collect();
    let bytes: usize = bodies.iter().map(|b| b[0].len()).sum();
    println!(
        "{agents} agents x {workers} workers, {intervals} interval(s): one reply {:.1} KiB, one interval's {:.0} MiB",
        bodies[0][0].len() as f64 / 1024.0,
        bytes as f64 / (1 << 20) as f64
    );
    let t = Instant::now();
    for b in &bodies {
        std::hint::black_box(decode(&b[0]));
    }
    let serial = t.elapsed().as_secs_f64();
    let t = Instant::now();
    std::thread::scope(|s| {
        for part in bodies.chunks(agents.div_ceil(threads)) {
            s.spawn(move || {
                for b in part {
                    std::hint::black_box(decode(&b[0]));
                }
            });
        }
    });
    let parallel = t.elapsed().as_secs_f64();
    println!(
        "decoding one interval's replies: {:.0} ms on one thread, {:.0} ms on {threads}",
        serial * 1e3,
        parallel * 1e3
    );

    let merge = run_fleet(bodies.clone(), workers, true, threads);
    let ms = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.0}", x * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "merge alone (replies decoded beforehand): interval handed over -> final: {} ms; run_hosts {:.1} s",
        ms(&merge.latency),
        merge.whole
    );
    let both = run_fleet(bodies, workers, false, threads);
    println!(
        "decode on {threads} threads + merge: interval handed over -> final: {} ms; run_hosts {:.1} s \
         (check, prepare and start run one thread per agent each)",
        ms(&both.latency),
        both.whole
    );
    println!(
        "controller memory per agent: {:.1} KiB at the peak of the run, {:.1} KiB held with the \
         result ({:.1} KiB per agent per interval: each host's own series keeps its histograms)",
        kib(both.peak, agents),
        kib(both.held, agents),
        kib(both.held, agents * intervals)
    );
    let worst_merge = merge.latency.iter().cloned().fold(0.0, f64::max);
    let worst = both.latency.iter().cloned().fold(0.0, f64::max);
    if worst >= 1.0 {
        println!(
            "OVER TARGET: decode + merge of one interval from {agents} agents took {worst:.2} s"
        );
    }
    assert!(
        worst_merge < 1.0,
        "merging one interval from {agents} agents took {worst_merge:.2} s (target < 1 s)"
    );
}
