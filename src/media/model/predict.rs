//! The model's steady state, analytically: a closed queueing network of
//! `qd` operations circulating through the host interface, the devices, the
//! log device and the write-back cache's destage, plus pure delays (cache
//! hits, cached writes), solved by mean-value analysis with Reiser's
//! correction for FIFO servers whose service time is not exponential (an
//! arrival finds the one in service half done in the mean of `E[S²]/E[S]`).

use super::params::Params;

/// A closed-loop workload, as `predict` sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// I/O size, bytes.
    pub bs: u64,
    /// Share of reads, 0 to 1.
    pub read: f64,
    /// Share of random accesses, 0 to 1 (the rest continue a sequential
    /// stream: the device's last access, or the read-ahead's stream).
    pub random: f64,
    /// Sequential streams sharing the devices at once (1 or more): with
    /// more than one, a read-ahead read finds another stream's last on its
    /// device and pays a positioning.
    pub streams: u32,
    /// Outstanding operations.
    pub qd: u32,
    /// The region the workload touches, bytes (the read cache's working set).
    pub span: u64,
    /// Writes are synchronous (O_DSYNC, FUA).
    pub sync: bool,
}

/// What the model predicts for a workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Operations per second.
    pub iops: f64,
    /// Mean latency, ns.
    pub latency_ns: f64,
}

/// One FIFO station of the network.
#[derive(Clone, Copy, Debug, Default)]
struct Station {
    /// Visits per operation to one copy (of `copies` identical ones).
    visits: f64,
    /// Identical copies (the devices).
    copies: f64,
    /// How many copies one visiting operation uses at once (its stripe
    /// units on different devices, served in parallel).
    fanout: f64,
    /// Mean and second moment of one visit's service, ns.
    mean: f64,
    m2: f64,
}

impl Station {
    /// Add a class of visits (`visits` per operation to each copy) with
    /// service moments `(mean, m2)`.
    fn add(&mut self, visits: f64, (mean, m2): (f64, f64)) {
        if visits <= 0.0 {
            return;
        }
        let v = self.visits + visits;
        self.mean = (self.mean * self.visits + mean * visits) / v;
        self.m2 = (self.m2 * self.visits + m2 * visits) / v;
        self.visits = v;
    }
}

/// `p`'s steady state under `w`: `None` for a workload of nothing
/// (`qd` 0, `bs` 0).
pub fn predict(p: &Params, w: &Workload) -> Option<Prediction> {
    if w.qd == 0 || w.bs == 0 {
        return None;
    }
    let first = solve(p, w, false);
    let destaged = p.destage_bytes_mean(w.bs, w.random);
    let write_rate = first.iops * (1.0 - w.read) * cached_writes(p, w) * destaged / 1e9;
    // The write-back cache only holds a burst: past the destage rate, writes
    // queue behind it as at any FIFO server (a random write costing it the
    // whole records it touches).
    if write_rate > p.destage {
        return Some(solve(p, w, true));
    }
    Some(first)
}

/// Share of writes that go through the write-back cache.
fn cached_writes(p: &Params, w: &Workload) -> f64 {
    if p.write_cache == 0 || (w.sync && !p.nvram && p.log.is_none()) {
        0.0
    } else {
        1.0
    }
}

/// The devices' work for one sequential read of `w` served by the
/// read-ahead, ns per device: its share (`bs` of a read-ahead read of
/// `chunk`) of the chunk's stripe units, each moving its bytes and, when
/// other streams share the devices, paying a positioning with the odds that
/// another stream's read came last on its device (`(streams - 1) /
/// streams`); 0 without read-ahead.
fn readahead_work(p: &Params, w: &Workload) -> f64 {
    let Some(ra) = p.readahead else { return 0.0 };
    let units = ra.chunk.div_ceil(p.stripe).min(p.count as u64).max(1);
    let share = ra.chunk.div_ceil(units);
    let streams = f64::from(w.streams.max(1));
    let positioned = (streams - 1.0) / streams;
    let per_share = p.device_moments(false, share, positioned).0;
    w.bs as f64 / ra.chunk as f64 * units as f64 / p.count as f64 * per_share
}

/// Mean-value analysis from 1 to `qd` operations.
fn solve(p: &Params, w: &Workload, destage_bound: bool) -> Prediction {
    let (r, wr) = (w.read, 1.0 - w.read);
    let hit = (p.read_cache as f64 / w.span.max(1) as f64).min(1.0);
    let cached = cached_writes(p, w);
    let bs = w.bs as f64;
    // Stripe units per operation, each on its own device.
    let units = w.bs.div_ceil(p.stripe).min(p.count as u64).max(1);
    let chunk = w.bs.div_ceil(units);
    let n = p.count as f64;
    let fan = units as f64;

    // With read-ahead a sequential read is served from what it fetched
    // (a delay of cache_ns) and the devices carry its bytes in the
    // background; only the random reads meet the read cache and the
    // devices on their own.
    let (seq_read, rand_read, read_random) = match p.readahead {
        Some(_) => (r * (1.0 - w.random), r * w.random, 1.0),
        None => (0.0, r, w.random),
    };
    let background = seq_read * readahead_work(p, w);
    let mut delay = rand_read * hit * p.cache_ns + seq_read * p.cache_ns + wr * cached * p.cache_ns;
    let mut st: Vec<Station> = Vec::new();
    let one = |v: f64, s: f64| {
        let mut x = Station {
            copies: 1.0,
            fanout: 1.0,
            ..Station::default()
        };
        x.add(v, (s, s * s));
        x
    };
    if let Some(b) = p.bus {
        st.push(one(1.0, bs / b));
    }
    let mut dev = Station {
        copies: n,
        fanout: fan,
        ..Station::default()
    };
    dev.add(
        rand_read * (1.0 - hit) * fan / n,
        p.device_moments(false, chunk, read_random),
    );
    dev.add(
        wr * (1.0 - cached) * fan / n,
        p.device_moments(true, chunk, w.random),
    );
    let devices_at = st.len();
    st.push(dev);
    let sync_logged = w.sync && !p.nvram && cached > 0.0;
    if let (Some(l), true) = (p.log, sync_logged) {
        // A logged write completes when both the log and the cache have it;
        // the log is the slower of the two below the destage bound.
        st.push(one(wr, l.latency_ns + bs / l.rate));
        delay -= wr * p.cache_ns;
    }
    if destage_bound {
        let destaged = p.destage_bytes_mean(w.bs, w.random);
        st.push(one(wr * cached, destaged / p.destage));
    }

    let mut q = vec![0.0; st.len()];
    let mut x = 0.0;
    for k in 1..=w.qd {
        let mut cycle = delay;
        // The read-ahead's share of each device at the rate so far: the
        // operations that queue there are served that much slower.
        let slow = 1.0 / (1.0 - (x * background).min(0.99));
        let resp: Vec<f64> = st
            .iter()
            .zip(&q)
            .enumerate()
            .map(|(i, (s, &qn))| {
                if s.visits <= 0.0 {
                    return 0.0;
                }
                let stretch = if i == devices_at { slow } else { 1.0 };
                let (mean, m2) = (s.mean * stretch, s.m2 * stretch * stretch);
                let u = x * s.visits * mean;
                let residual = m2 / (2.0 * mean);
                mean + mean * (qn - u).max(0.0) + u * residual
            })
            .collect();
        for (s, rv) in st.iter().zip(&resp) {
            cycle += s.visits * s.copies / s.fanout * rv;
        }
        x = k as f64 / cycle;
        for ((s, rv), qn) in st.iter().zip(&resp).zip(q.iter_mut()) {
            *qn = x * s.visits * rv;
        }
    }
    // Reiser's correction lets a nearly deterministic server (the destage,
    // a flash channel) pass its capacity by up to half a service time per
    // cycle; no station serves faster than one visit per service time.
    let capacity = st
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let work = s.visits * s.mean + if i == devices_at { background } else { 0.0 };
            if work > 0.0 {
                1.0 / work
            } else {
                f64::INFINITY
            }
        })
        .fold(f64::INFINITY, f64::min);
    let x = x.min(capacity);
    Prediction {
        iops: x * 1e9,
        // Little's law over the closed loop (the last cycle, unless capped).
        latency_ns: w.qd as f64 / x,
    }
}
