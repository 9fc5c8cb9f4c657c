//! The model's mutable state and the rules that turn one operation into a
//! completion time (see the module doc of `model/`).

use super::busy::Busy;
use super::params::{Params, Readahead, unit};
use super::readahead::{Found, Streams};
use crate::media::stats::{self, Counters, StationBusy};
use crate::media::{MediaOp, OpKind};
use crate::workload::pattern::splitmix64;

/// Granularity of the read cache's hit decision.
const CACHE_BLOCK: u64 = 4096;

/// Write streams told apart: a write that starts within a record of where
/// one of the last this many sequential streams (or random writes) ended
/// continues it. Several clients' sequential writers interleave at the
/// medium; a random write over a store of gigabytes lands within a record
/// of one of these ends with odds of about `STREAMS * 2 * record / store`
/// (0.4% for 128 KiB records over 1 GiB).
const STREAMS: usize = 16;

/// What earlier operations left behind. Times are ns on the caller's clock.
#[derive(Debug)]
pub struct State {
    /// Each device is busy until then (FIFO).
    busy: Vec<f64>,
    /// Where each device's last access ended (device-local byte offset).
    last_end: Vec<u64>,
    /// Operations each device has served (with the offset, seeds its draws).
    served: Vec<u64>,
    /// The host interface is busy until then.
    bus_busy: f64,
    /// The log device is busy until then.
    log_busy: f64,
    /// Every byte accepted into the write-back cache is destaged by then.
    drained_at: f64,
    /// With [`Params::full_blocks`]: writes arriving before this wait
    /// until it (the cache overfilled and half of it is being written out).
    blocked_until: f64,
    /// Bytes written since the last flush that the log does not hold.
    unlogged: u64,
    /// The device, start and end of the last commit of the log on the pool
    /// (the next goes to the device after it).
    log_dev: usize,
    log_start: f64,
    log_done: f64,
    /// Bytes of destage ([`Params::destage_bytes`]) the write-back cache
    /// accepted since the open transaction group began (with `txg_ns`).
    txg_dirty: u64,
    /// When the open transaction group closes (0: none opened yet).
    txg_next: f64,
    /// The transaction groups closed so far are written out by then.
    synced_at: f64,
    /// The region touched so far, `[lo, hi)`.
    lo: u64,
    hi: u64,
    /// Where recent writes ended (`u64::MAX`: none yet), and the slot a
    /// write that continues none of them takes next.
    write_ends: [u64; STREAMS],
    next_stream: usize,
    /// The sequential read streams the read-ahead follows.
    streams: Streams,
    /// What it has done (for [`State::counters`]).
    meter: Meter,
}

/// What the medium has done since its reset: each station's work and the
/// operations by kind.
#[derive(Debug, Default)]
struct Meter {
    /// The latest arrival, ns (work that ended by then is done).
    arrival: f64,
    devices: Vec<Busy>,
    bus: Busy,
    log: Busy,
    destage: Busy,
    txg: Busy,
    reads: u64,
    read_bytes: u64,
    read_hits: u64,
    read_misses: u64,
    readahead_bytes: u64,
    writes: u64,
    write_bytes: u64,
    sync_writes: u64,
    flushes: u64,
}

/// One device's share of an operation.
#[derive(Clone, Copy)]
struct Share {
    bytes: u64,
    first: u64,
    end: u64,
}

impl State {
    /// Idle devices, empty caches, nothing touched.
    pub fn new(p: &Params) -> State {
        State {
            busy: vec![0.0; p.count],
            last_end: vec![u64::MAX; p.count],
            served: vec![0; p.count],
            bus_busy: 0.0,
            log_busy: 0.0,
            drained_at: 0.0,
            blocked_until: 0.0,
            unlogged: 0,
            log_dev: p.count - 1,
            log_start: 0.0,
            log_done: 0.0,
            txg_dirty: 0,
            txg_next: 0.0,
            synced_at: 0.0,
            lo: u64::MAX,
            hi: 0,
            write_ends: [u64::MAX; STREAMS],
            next_stream: 0,
            streams: Streams::default(),
            meter: Meter {
                devices: vec![Busy::default(); p.count],
                ..Meter::default()
            },
        }
    }

    /// What the medium has done since it was new, as of `now` (ns): the
    /// work each station did by then (not what is queued beyond it), the
    /// operations by kind and the dirty data the write-back cache holds.
    pub fn counters(&self, p: &Params, now: u64) -> Counters {
        let t = now as f64;
        let m = &self.meter;
        let ns = |x: f64| x.round() as u64;
        let station = |name: &str, busy_ns: f64, copies: usize| StationBusy {
            name: name.to_string(),
            busy_ns: ns(busy_ns),
            copies: copies as u32,
        };
        let mut stations = vec![station(
            stats::DEVICES,
            m.devices.iter().map(|b| b.done_by(t)).sum(),
            p.count,
        )];
        if p.write_cache > 0 {
            stations.push(station(stats::DESTAGE, m.destage.done_by(t), 1));
        }
        if p.txg_ns.is_some() {
            stations.push(station(stats::TXG, m.txg.done_by(t), 1));
        }
        if p.log.is_some() {
            stations.push(station(stats::LOG, m.log.done_by(t), 1));
        }
        if p.bus.is_some() {
            stations.push(station(stats::BUS, m.bus.done_by(t), 1));
        }
        let dirty_bytes = if p.write_cache > 0 {
            ((self.drained_at - t).max(0.0) * p.destage).min(p.write_cache as f64) as u64
        } else {
            0
        };
        Counters {
            stations,
            reads: m.reads,
            read_bytes: m.read_bytes,
            read_hits: m.read_hits,
            read_misses: m.read_misses,
            readahead_bytes: m.readahead_bytes,
            writes: m.writes,
            write_bytes: m.write_bytes,
            sync_writes: m.sync_writes,
            flushes: m.flushes,
            dirty_bytes,
        }
    }

    /// When `op`, arriving at `now`, completes.
    pub fn schedule(&mut self, p: &Params, op: &MediaOp, now: u64) -> u64 {
        let now = now as f64;
        let len = u64::from(op.len);
        self.meter.arrival = self.meter.arrival.max(now);
        if let Some(interval) = p.txg_ns {
            self.close_txgs(p, interval, now);
        }
        let done = match op.kind {
            OpKind::Read => {
                self.meter.reads += 1;
                self.meter.read_bytes += len;
                let t = self.bus(p, now, len);
                self.read(p, op.offset, len, now, t)
            }
            OpKind::Write => {
                self.meter.writes += 1;
                self.meter.write_bytes += len;
                self.meter.sync_writes += u64::from(op.sync);
                let t = self.bus(p, now, len);
                self.write(p, op, t)
            }
            OpKind::Flush => {
                self.meter.flushes += 1;
                self.flush(p, now)
            }
        };
        done.ceil() as u64
    }

    /// A read of `len` bytes at `offset`, arriving at `now`, that has
    /// crossed the host interface at `t`: from the read-ahead when it
    /// continues a stream it follows, else from the read cache or the
    /// devices.
    fn read(&mut self, p: &Params, offset: u64, len: u64, now: f64, t: f64) -> f64 {
        self.lo = self.lo.min(offset);
        self.hi = self.hi.max(offset + len);
        if let Some(ra) = &p.readahead {
            // A stream delivered a few requests out of order still lands
            // within a request, a stripe unit or a record of its end.
            let window = len.max(p.stripe).max(p.record.unwrap_or(0));
            if let Found::Stream(k) = self.streams.find(ra, offset, len, now, window) {
                return self.stream_read(p, ra, k, (offset, len), now, t);
            }
        }
        if self.read_hit(p, offset) {
            self.meter.read_hits += 1;
            t + p.cache_ns
        } else {
            self.meter.read_misses += 1;
            self.devices(p, false, offset, len, t)
        }
    }

    /// A read (`offset`, `len`) of the read-ahead's stream `k`: it waits
    /// for the read-ahead reads holding its data (a hit once they are
    /// done) and reads on demand what they had not fetched (a miss); the
    /// stream is then fetched further ahead, each read-ahead read on the
    /// devices after it.
    fn stream_read(
        &mut self,
        p: &Params,
        ra: &Readahead,
        k: usize,
        (offset, len): (u64, u64),
        now: f64,
        t: f64,
    ) -> f64 {
        let plan = self.streams.plan(ra, k, offset, len, now);
        let done = match plan.demand {
            Some((from, to)) => {
                self.meter.read_misses += 1;
                self.devices(p, false, from, to - from, t)
                    .max(plan.fetched_by)
            }
            None => {
                self.meter.read_hits += 1;
                (t + p.cache_ns).max(plan.fetched_by)
            }
        };
        for (from, to) in plan.fetch {
            let fetched = self.devices(p, false, from, to - from, now);
            self.streams.fetching(k, from, to, fetched);
            self.meter.readahead_bytes += to - from;
        }
        done
    }

    /// A write that has crossed the host interface at `t`.
    fn write(&mut self, p: &Params, op: &MediaOp, t: f64) -> f64 {
        let len = u64::from(op.len);
        if p.write_cache == 0 {
            return self.devices(p, true, op.offset, len, t);
        }
        let seq = self.continues_a_stream(p, op.offset, len);
        let cost = p.destage_bytes(op.offset, len, seq);
        if p.nvram || !op.sync {
            if (p.log.is_some() || p.pool_log) && !p.nvram {
                self.unlogged += len;
            }
            self.txg_dirty += cost;
            return self.admit(p, cost, t) + p.cache_ns;
        }
        match p.log {
            Some(_) => {
                let logged = self.log(p, len, t);
                logged.max(self.admit(p, cost, t))
            }
            None => self.devices(p, true, op.offset, len, t),
        }
    }

    /// Whether a write of `len` bytes at `offset` continues a recent write
    /// (starts within a record of where one ended, ahead or behind: a
    /// server's threads deliver a stream a few writes out of order); the
    /// stream's end moves to this write's. Always true without a record
    /// (every write then costs its own length anyway).
    fn continues_a_stream(&mut self, p: &Params, offset: u64, len: u64) -> bool {
        let Some(record) = p.record else { return true };
        let end = offset + len;
        let near = |e: u64| e != u64::MAX && offset.abs_diff(e) <= record;
        match self.write_ends.iter().position(|&e| near(e)) {
            Some(k) => {
                self.write_ends[k] = end;
                true
            }
            None => {
                self.write_ends[self.next_stream] = end;
                self.next_stream = (self.next_stream + 1) % STREAMS;
                false
            }
        }
    }

    /// A flush arriving at `now`.
    fn flush(&mut self, p: &Params, now: f64) -> f64 {
        if p.nvram || p.write_cache == 0 {
            return now + p.cache_ns;
        }
        if p.log.is_some() {
            let bytes = std::mem::take(&mut self.unlogged);
            return self.log(p, bytes, now);
        }
        if p.pool_log {
            return self.pool_log(p, now);
        }
        (now + p.cache_ns).max(self.drained_at)
    }

    /// A flush arriving at `now` on a pool that keeps its log on its own
    /// devices (ZFS with no separate log device). One commit runs at a time:
    /// the bytes written since the last flush go as one write to the next
    /// device in turn once the commit before it is done, paying a seek and a
    /// rotation (the log's blocks are away from where the head last was). A
    /// flush that arrives before the last commit has begun rides it (ZFS
    /// gathers the writers waiting for a commit into the next one); a flush
    /// that finds nothing new waits for the commit holding its data.
    fn pool_log(&mut self, p: &Params, now: f64) -> f64 {
        let bytes = std::mem::take(&mut self.unlogged);
        if bytes == 0 {
            return (now + p.cache_ns).max(self.log_done);
        }
        if now < self.log_start {
            let more = bytes as f64 / p.transfer;
            let from = self.busy[self.log_dev];
            self.busy[self.log_dev] += more;
            let arrival = self.meter.arrival;
            self.meter.devices[self.log_dev].add(from, from + more, arrival);
            self.log_done += more;
            return self.log_done;
        }
        let d = (self.log_dev + 1) % p.count;
        let begin = self.busy[d].max(now).max(self.log_done).max(self.synced_at);
        let mut seed = bytes ^ (self.served[d] << 40) ^ ((d as u64) << 20) ^ 0x106;
        let svc = p.device_ns(true, bytes, false, splitmix64(&mut seed));
        self.busy[d] = begin + svc;
        let arrival = self.meter.arrival;
        self.meter.devices[d].add(begin, begin + svc, arrival);
        self.last_end[d] = u64::MAX;
        self.served[d] += 1;
        self.log_dev = d;
        self.log_start = begin;
        self.log_done = self.busy[d];
        self.log_done
    }

    /// Close every transaction group whose interval ended by `now`: its
    /// data (as the destage counts it, [`Params::destage_bytes`]) is
    /// written out at the destage rate after the groups before it,
    /// and until then the log's commits wait ([`State::pool_log`]).
    fn close_txgs(&mut self, p: &Params, interval: f64, now: f64) {
        if self.txg_next == 0.0 {
            self.txg_next = now + interval;
        }
        if now < self.txg_next {
            return;
        }
        let bytes = std::mem::take(&mut self.txg_dirty);
        if bytes > 0 {
            let start = self.synced_at.max(self.txg_next);
            self.synced_at = start + bytes as f64 / p.destage;
            let arrival = self.meter.arrival;
            self.meter.txg.add(start, self.synced_at, arrival);
        }
        // After an idle stretch the next group opens now.
        self.txg_next = if self.txg_next + interval > now {
            self.txg_next + interval
        } else {
            now + interval
        };
    }

    /// Cross the host interface (FIFO) with `len` bytes from `t`.
    fn bus(&mut self, p: &Params, t: f64, len: u64) -> f64 {
        match p.bus {
            Some(rate) => {
                let start = self.bus_busy.max(t);
                self.bus_busy = start + len as f64 / rate;
                let arrival = self.meter.arrival;
                self.meter.bus.add(start, self.bus_busy, arrival);
                self.bus_busy
            }
            None => t,
        }
    }

    /// Write `len` bytes to the log device (FIFO) from `t`.
    fn log(&mut self, p: &Params, len: u64, t: f64) -> f64 {
        let Some(l) = p.log else { return t };
        let start = self.log_busy.max(t);
        self.log_busy = start + l.latency_ns + len as f64 / l.rate;
        let arrival = self.meter.arrival;
        self.meter.log.add(start, self.log_busy, arrival);
        self.log_busy
    }

    /// Accept `len` dirty bytes (as the destage counts them) at `t`: returns
    /// when the cache has room.
    fn admit(&mut self, p: &Params, len: u64, t: f64) -> f64 {
        let start = self.drained_at.max(t);
        self.drained_at = start + len as f64 / p.destage;
        let arrival = self.meter.arrival;
        self.meter.destage.add(start, self.drained_at, arrival);
        let full = p.write_cache as f64 / p.destage;
        if !p.full_blocks {
            return t.max(self.drained_at - full);
        }
        // Blocked writers wait for the half being written out; a write that
        // overfills the cache blocks itself and those behind it until then.
        if t < self.blocked_until {
            return self.blocked_until;
        }
        if self.drained_at - t > full {
            self.blocked_until = self.drained_at - full / 2.0;
            return self.blocked_until;
        }
        t
    }

    /// Whether a read at `offset` hits the read cache (the region touched
    /// includes it).
    fn read_hit(&self, p: &Params, offset: u64) -> bool {
        if p.read_cache == 0 {
            return false;
        }
        let ratio = p.read_cache as f64 / (self.hi - self.lo) as f64;
        let mut x = offset / CACHE_BLOCK;
        unit(splitmix64(&mut x)) < ratio
    }

    /// Serve `len` bytes at `offset` on the devices its stripe units live on,
    /// each FIFO from `t`; returns when the last share is done.
    fn devices(&mut self, p: &Params, write: bool, offset: u64, len: u64, t: f64) -> f64 {
        let n = p.count as u64;
        let first = offset / p.stripe;
        let last = (offset + len.max(1) - 1) / p.stripe;
        let mut shares: Vec<Option<Share>> = vec![None; (last - first + 1).min(n) as usize];
        for s in first..=last {
            let from = (s * p.stripe).max(offset);
            let to = ((s + 1) * p.stripe).min(offset + len);
            let local = (s / n) * p.stripe + from % p.stripe;
            let sh = shares[((s - first) % n) as usize].get_or_insert(Share {
                bytes: 0,
                first: local,
                end: local,
            });
            sh.bytes += to - from;
            sh.end = local + (to - from);
        }
        let mut done = t;
        for (k, sh) in shares.into_iter().enumerate() {
            let Some(sh) = sh else { continue };
            let d = ((first + k as u64) % n) as usize;
            let seq = near_head(self.last_end[d], sh.first, p.stripe);
            let mut seed = sh.first ^ (self.served[d] << 40) ^ d as u64;
            let svc = p.device_ns(write, sh.bytes, seq, splitmix64(&mut seed));
            let start = self.busy[d].max(t);
            self.busy[d] = start + svc;
            let arrival = self.meter.arrival;
            self.meter.devices[d].add(start, self.busy[d], arrival);
            self.last_end[d] = sh.end;
            self.served[d] += 1;
            done = done.max(self.busy[d]);
        }
        done
    }
}

/// Whether a device operation starting at `first` (device-local) is served
/// without a seek: it starts within `window` bytes of where the device's last
/// operation ended (`last_end`, `u64::MAX` before the first), ahead or behind.
/// A stream read by a server's worker threads reaches the device a few
/// requests out of order; a drive's read-ahead segment (and ZFS's prefetch)
/// holds the data around the head, so such a read is a transfer, as exact
/// continuation is. The window is one stripe unit: a random operation over a
/// store of gigabytes lands that close with negligible odds.
fn near_head(last_end: u64, first: u64, window: u64) -> bool {
    last_end != u64::MAX && first.abs_diff(last_end) <= window
}
