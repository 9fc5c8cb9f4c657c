//! The read-ahead's streams: which sequential read stream a read continues,
//! how far ahead each is fetched, and the read-ahead reads in flight (see
//! [`super::params::Readahead`]; `state.rs` puts the reads on the devices).
//!
//! A stream is opened by a read that continues none, in a free slot or the
//! least recently read one idle for the reap time (ZFS's zfetch: 2 s, so
//! random reads cannot push busy sequential streams out; with 0, plain LRU).
//! A read continues a stream when it starts within a window of where the
//! stream's reads have reached, ahead or behind (a server's threads deliver
//! a stream a few requests out of order). Each read that continues it
//! doubles how far ahead it is fetched, from the read's own length up to
//! the distance (zfetch doubles its cap the same way), and the read-ahead
//! reads whole chunks from where it had fetched to there.

use super::params::Readahead;
use std::collections::VecDeque;

/// One stream the read-ahead follows.
#[derive(Clone, Debug)]
struct Stream {
    /// Where its reads have reached (the highest end so far).
    next: u64,
    /// The read-ahead has fetched (or is fetching) up to here.
    fetched: u64,
    /// How far ahead of `next` it fetches now.
    ahead: u64,
    /// Its read-ahead reads not yet passed by its reads, in order:
    /// `[from, to)` in the store, on the cache by `done` (ns).
    reads: VecDeque<(u64, u64, f64)>,
    /// Its latest read arrived then (ns).
    last: f64,
}

/// The streams the read-ahead follows (none at first).
#[derive(Clone, Debug, Default)]
pub struct Streams {
    slots: Vec<Stream>,
}

/// What a read is to the read-ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// It continues the stream in this slot.
    Stream(usize),
    /// It continues none (it may have opened one, which later reads continue).
    Alone,
}

/// What serving a read of a stream takes: the part of it the read-ahead
/// had not fetched (to read from the devices now), and the read-ahead
/// reads to issue after it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// `[from, to)`: read on demand, not yet fetched.
    pub demand: Option<(u64, u64)>,
    /// When the parts already being fetched are on the cache (ns; 0: none).
    pub fetched_by: f64,
    /// The read-ahead reads to issue now, `[from, to)` each.
    pub fetch: Vec<(u64, u64)>,
}

impl Streams {
    /// The stream a read of `len` bytes at `offset`, arriving at `now`,
    /// continues; a read that continues none opens one where a slot is
    /// free or idle past the reap time.
    pub fn find(&mut self, ra: &Readahead, offset: u64, len: u64, now: f64, window: u64) -> Found {
        let near = |s: &Stream| offset <= s.next + window && offset + len + window >= s.next;
        if let Some(k) = self.slots.iter().position(near) {
            return Found::Stream(k);
        }
        let fresh = Stream {
            next: offset + len,
            fetched: offset + len,
            ahead: len,
            reads: VecDeque::new(),
            last: now,
        };
        if self.slots.len() < ra.streams {
            self.slots.push(fresh);
        } else if let Some(s) = self
            .slots
            .iter_mut()
            .filter(|s| now - s.last >= ra.reap_ns)
            .min_by(|a, b| a.last.total_cmp(&b.last))
        {
            *s = fresh;
        }
        Found::Alone
    }

    /// Serve a read of `len` bytes at `offset`, arriving at `now`, of the
    /// stream in slot `k`: what it waits for and what to fetch next.
    pub fn plan(&mut self, ra: &Readahead, k: usize, offset: u64, len: u64, now: f64) -> Plan {
        let s = &mut self.slots[k];
        s.last = now;
        s.ahead = (s.ahead * 2).clamp(len, ra.distance.max(len));
        let end = offset + len;
        let mut plan = Plan::default();
        for &(from, to, done) in &s.reads {
            if from < end && to > offset {
                plan.fetched_by = plan.fetched_by.max(done);
            }
        }
        if end > s.fetched {
            plan.demand = Some((offset.max(s.fetched), end));
            s.fetched = end;
        }
        s.next = s.next.max(end);
        // Whole chunks up to `ahead` past the reads; the first ends on a
        // chunk boundary.
        let limit = s.next + s.ahead;
        loop {
            let to = (s.fetched / ra.chunk + 1) * ra.chunk;
            if to > limit {
                break;
            }
            plan.fetch.push((s.fetched, to));
            s.fetched = to;
        }
        // What its reads have passed by more than the distance is on the
        // cache or gone from it: forget it.
        let behind = s.next.saturating_sub(ra.distance);
        while s.reads.front().is_some_and(|&(_, to, _)| to <= behind) {
            s.reads.pop_front();
        }
        plan
    }

    /// The read-ahead read `[from, to)` of the stream in slot `k` is on the
    /// cache at `done`.
    pub fn fetching(&mut self, k: usize, from: u64, to: u64, done: f64) {
        self.slots[k].reads.push_back((from, to, done));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ra() -> Readahead {
        Readahead {
            streams: 2,
            distance: 1 << 20,
            chunk: 128 << 10,
            reap_ns: 2e9,
        }
    }

    #[test]
    fn a_stream_is_found_by_its_second_read_and_fetched_ahead_in_chunks() {
        let (ra, mut s) = (ra(), Streams::default());
        let kib = 1024;
        assert_eq!(s.find(&ra, 0, 64 * kib, 0.0, 128 * kib), Found::Alone);
        let k = match s.find(&ra, 64 * kib, 64 * kib, 1.0, 128 * kib) {
            Found::Stream(k) => k,
            f => panic!("{f:?}"),
        };
        let p = s.plan(&ra, k, 64 * kib, 64 * kib, 1.0);
        // Not fetched yet: read on demand; then ahead doubled to 128 KiB
        // past 128 KiB: one chunk, up to 256 KiB.
        assert_eq!(p.demand, Some((64 * kib, 128 * kib)));
        assert_eq!(p.fetch, vec![(128 * kib, 256 * kib)]);
        s.fetching(k, 128 * kib, 256 * kib, 50.0);
        // The next read is inside it: no demand, it waits for that read.
        let p = s.plan(&ra, k, 128 * kib, 64 * kib, 2.0);
        assert_eq!((p.demand, p.fetched_by), (None, 50.0));
        // Ahead never passes the distance.
        for i in 3..40 {
            let p = s.plan(&ra, k, i * 64 * kib, 64 * kib, i as f64);
            for &(f, t) in &p.fetch {
                assert!(t - f <= ra.chunk && t <= (i + 1) * 64 * kib + ra.distance);
                s.fetching(k, f, t, 0.0);
            }
        }
    }

    #[test]
    fn a_new_stream_takes_only_a_free_or_idle_slot() {
        let (ra, mut s) = (ra(), Streams::default());
        let gib = 1u64 << 30;
        s.find(&ra, 0, 4096, 0.0, 4096);
        s.find(&ra, gib, 4096, 1.0, 4096);
        // Both slots busy: a third stream is not followed...
        s.find(&ra, 2 * gib, 4096, 2.0, 4096);
        assert_eq!(s.find(&ra, 2 * gib + 4096, 4096, 3.0, 4096), Found::Alone);
        // ...until one has been idle past the reap time.
        let later = 1.0 + ra.reap_ns + 1.0;
        s.find(&ra, 3 * gib, 4096, later, 4096);
        assert!(matches!(
            s.find(&ra, 3 * gib + 4096, 4096, later, 4096),
            Found::Stream(_)
        ));
        assert!(matches!(
            s.find(&ra, gib + 4096, 4096, later, 4096),
            Found::Stream(_)
        ));
    }
}
