//! A backend capped at a Fibre Channel link's payload rate, native or over
//! Ethernet: the block baseline in the FC role (`file:/dev/loopN?fc=8gfc`) or
//! the FCoE role (`file:/dev/loopN?fcoe=10gbe`).
//!
//! [`FcCapped`] wraps the backend that moves the bytes (the file backend over
//! the lab's loop device) and holds each completion until the link could have
//! carried it: an I/O of `len` bytes occupies its direction of the
//! full-duplex link (reads' data flows target to initiator, writes' data the
//! other way) for `len / rate` seconds, where `rate` is the wire model's
//! payload rate for that I/O size and direction
//! ([`crate::linkmodel::lab::block_cap`]: FC frames, natively with 8b/10b or
//! 64b/66b encoding or each in a tagged Ethernet frame for FCoE, and the
//! command, transfer-ready and response frames of each exchange). The
//! link is a serial resource per direction: a transfer starts when the I/O
//! has completed below and the previous transfer in its direction has ended.
//! So large I/O is capped in MB/s at the model's rate and small I/O only by
//! what each exchange costs on the wire, as on a real FC link.
//!
//! Every engine thread of this process that opens the same target shares one
//! link (one HBA port): the clock is process-wide, keyed by the target URL. A
//! fleet's hosts each have their own link.
//!
//! The path is always opened with O_DIRECT (`backends::open`), whatever the
//! workload says: in the FC role the host has no cache of its own in front
//! of the LUN. This backend reads the clock to pace completions, never for
//! statistics: the engine stamps every I/O as for any backend.

use crate::io::{Backend, BackendError, BufferPool, Completion, QueueError, Request, Wait};
use crate::linkmodel::{self, lab::block_cap};
use crate::target::FcWire;
use crate::workload::Dir;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One link's two directions: when each is next free.
#[derive(Debug, Default)]
struct LinkClock {
    /// Reads' data direction, writes' data direction.
    free_at: Mutex<[Option<Instant>; 2]>,
}

impl LinkClock {
    /// Book `wire` of the link in direction `dir` for an I/O that finished
    /// below at `now`; returns when its transfer ends.
    fn book(&self, dir: Dir, now: Instant, wire: Duration) -> Instant {
        let mut f = self.free_at.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut f[matches!(dir, Dir::Write) as usize];
        let start = slot.map_or(now, |t| t.max(now));
        let end = start + wire;
        *slot = Some(end);
        end
    }
}

/// The link of each capped target in this process.
fn clock_of(target: &str) -> Arc<LinkClock> {
    static LINKS: OnceLock<Mutex<HashMap<String, Arc<LinkClock>>>> = OnceLock::new();
    let mut m = LINKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    m.entry(target.to_string()).or_default().clone()
}

/// A backend whose completions wait for an FC or FCoE link; see the module docs.
pub struct FcCapped {
    inner: Box<dyn Backend>,
    wire: FcWire,
    link: String,
    target: String,
    clock: Arc<LinkClock>,
    /// Requests queued and not yet returned by `reap`: slot → (len, dir).
    pending: HashMap<u32, (u32, Dir)>,
    /// Finished below, waiting for the link: (transfer end, completion).
    held: Vec<(Instant, Completion)>,
    /// Seconds on the wire per byte, by (I/O size, is a write).
    per_byte: HashMap<(u32, bool), f64>,
}

impl FcCapped {
    /// Cap `inner` (serving `target`) at `link`, carrying FC frames as
    /// `wire` says: an FC link (`1gfc` .. `32gfc`) or, for FCoE, an Ethernet
    /// link of 10 Gb/s or more (`10gbe` .. `100gbe`).
    pub fn new(
        inner: Box<dyn Backend>,
        target: &str,
        wire: FcWire,
        link: &str,
    ) -> Result<FcCapped, BackendError> {
        block_cap(wire.protocol(), link, 4096, linkmodel::Dir::Read)
            .map_err(|e| BackendError::new(target, e.to_string()))?;
        Ok(FcCapped {
            inner,
            wire,
            link: link.to_string(),
            target: target.to_string(),
            clock: clock_of(target),
            pending: HashMap::new(),
            held: Vec::new(),
            per_byte: HashMap::new(),
        })
    }

    /// How long `len` bytes in `dir` occupy the link.
    fn wire_time(&mut self, len: u32, dir: Dir) -> Result<Duration, BackendError> {
        let key = (len, matches!(dir, Dir::Write));
        let per_byte = match self.per_byte.get(&key) {
            Some(s) => *s,
            None => {
                let d = match dir {
                    Dir::Read => linkmodel::Dir::Read,
                    Dir::Write => linkmodel::Dir::Write,
                };
                let rate = block_cap(self.wire.protocol(), &self.link, u64::from(len.max(1)), d)
                    .map_err(|e| BackendError::new(&self.target, e.to_string()))?;
                let s = 1.0 / rate;
                self.per_byte.insert(key, s);
                s
            }
        };
        Ok(Duration::from_secs_f64(per_byte * f64::from(len)))
    }

    /// Reap what the inner backend has finished, waiting as `wait` says, and
    /// book each on the link.
    fn collect(&mut self, wait: Wait) -> Result<(), BackendError> {
        let mut done = Vec::new();
        self.inner.reap(wait, &mut done)?;
        let now = Instant::now();
        for c in done {
            let due = match (c.result, self.pending.get(&c.slot)) {
                (Ok(n), Some(&(_, dir))) if n > 0 => {
                    let wire = self.wire_time(n, dir)?;
                    self.clock.book(dir, now, wire)
                }
                // A failed I/O carries no data: only its response crosses.
                _ => now,
            };
            self.held.push((due, c));
        }
        Ok(())
    }

    /// Move every held completion whose transfer has ended to `out`.
    fn release(&mut self, now: Instant, out: &mut Vec<Completion>) -> usize {
        let before = out.len();
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].0 <= now {
                let (_, c) = self.held.swap_remove(i);
                self.pending.remove(&c.slot);
                out.push(c);
            } else {
                i += 1;
            }
        }
        out.len() - before
    }
}

// SAFETY: FcCapped touches no buffer itself: it hands each request, lease and
// all, to `inner` and only delays the completions `inner` returned, which
// `inner` promised no longer to touch (its own `unsafe impl Backend`). A
// request `inner` refuses is refused here. Dropping FcCapped drops `inner`,
// and `retire` is `inner`'s, so what `inner` promises at drop holds here.
unsafe impl Backend for FcCapped {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn depth(&self) -> usize {
        self.inner.depth()
    }

    fn features(&self) -> String {
        let inner = self.inner.features();
        let cap = format!(
            "O_DIRECT, capped at the {} {} link's payload rate",
            self.link,
            self.wire.name()
        );
        if inner.is_empty() {
            cap
        } else {
            format!("{inner}, {cap}")
        }
    }

    fn register_buffers(&mut self, pool: &BufferPool) -> Result<(), BackendError> {
        self.inner.register_buffers(pool)
    }

    fn identity(&self, disk: usize) -> Option<String> {
        self.inner.identity(disk)
    }

    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        let slot = req.slot;
        self.pending.insert(slot, (req.len(), req.dir));
        self.inner.queue(req).inspect_err(|_| {
            self.pending.remove(&slot);
        })
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        self.inner.commit()
    }

    fn commit_each(&self) -> bool {
        self.inner.commit_each()
    }

    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        let deadline = wait.timeout.map(|t| Instant::now() + t);
        let want = wait.want(self.pending.len());
        let mut got = 0;
        loop {
            let below = self.pending.len() - self.held.len();
            if below > 0 {
                self.collect(Wait::POLL)?;
            }
            let now = Instant::now();
            got += self.release(now, out);
            if got >= want || deadline.is_some_and(|d| now >= d) {
                return Ok(got);
            }
            let next_due = self.held.iter().map(|h| h.0).min();
            let until = [next_due, deadline].into_iter().flatten().min();
            let left = until.map(|u| u.saturating_duration_since(now));
            if self.pending.len() > self.held.len() {
                self.collect(Wait {
                    min: 1,
                    timeout: left,
                })?;
            } else if let Some(w) = left {
                std::thread::sleep(w);
            } else {
                return Ok(got);
            }
        }
    }

    fn error_detail(&self) -> Option<String> {
        self.inner.error_detail()
    }

    fn abandon(&mut self) {
        self.inner.abandon()
    }

    fn retire(&mut self) -> bool {
        self.inner.retire()
    }

    fn check(&mut self) -> Result<(), BackendError> {
        self.inner.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::null::NullBackend;
    use crate::io::{Io, Lane};

    /// Move `n` I/Os of `len` bytes in `dir` through a null backend capped at
    /// `link`, `depth` at a time; returns the bytes per second achieved.
    fn throughput(wire: FcWire, link: &str, dir: Dir, len: u32, n: usize, depth: usize) -> f64 {
        let target = format!("null:?test={}-{link}-{dir:?}-{len}-{n}-{depth}", wire.key());
        let b = FcCapped::new(Box::new(NullBackend::new(depth)), &target, wire, link).unwrap();
        let mut lane = Lane::new(Box::new(b), BufferPool::new(depth, len as usize)).unwrap();
        let io = match dir {
            Dir::Read => Io::read(0, len),
            Dir::Write => Io::write(0, len),
        };
        let ios = vec![io; n];
        let t = Instant::now();
        lane.run(
            &ios,
            depth,
            Duration::from_secs(10),
            |_, _| {},
            |_, r, _| {
                assert_eq!(r, Ok(len));
                Ok(())
            },
        )
        .unwrap();
        f64::from(len) * n as f64 / t.elapsed().as_secs_f64()
    }

    /// The wire model's payload rate for `len`-byte I/Os in `dir` on `link`.
    fn model(wire: FcWire, link: &str, dir: Dir, len: u32) -> f64 {
        let d = match dir {
            Dir::Read => linkmodel::Dir::Read,
            Dir::Write => linkmodel::Dir::Write,
        };
        block_cap(wire.protocol(), link, u64::from(len), d).unwrap()
    }

    #[test]
    fn large_reads_run_at_the_models_rate_and_no_faster() {
        let model = model(FcWire::Fc, "2gfc", Dir::Read, 1 << 20);
        let got = throughput(FcWire::Fc, "2gfc", Dir::Read, 1 << 20, 40, 4);
        assert!(
            got <= model * 1.02 && got >= model * 0.85,
            "{got:.0} B/s against the model's {model:.0}"
        );
    }

    #[test]
    fn large_fcoe_reads_and_writes_run_at_the_models_rate_and_no_faster() {
        // 10 GbE FCoE carries about 1198 MB/s of 1 MiB I/Os: 300 of them take
        // a quarter of a second each way.
        for dir in [Dir::Read, Dir::Write] {
            let model = model(FcWire::Fcoe, "10gbe", dir, 1 << 20);
            assert!(model > 1.19e9 && model < 1.2e9, "{dir:?}: {model:.0}");
            let got = throughput(FcWire::Fcoe, "10gbe", dir, 1 << 20, 300, 4);
            assert!(
                got <= model * 1.02 && got >= model * 0.85,
                "{dir:?}: {got:.0} B/s against the model's {model:.0}"
            );
        }
    }

    #[test]
    fn an_unknown_link_is_refused_naming_it() {
        let e = FcCapped::new(Box::new(NullBackend::new(1)), "null:", FcWire::Fc, "3gfc")
            .err()
            .unwrap();
        assert!(e.to_string().contains("3gfc"), "{e}");
        // FCoE is carried by Ethernet of 10 Gb/s or more only.
        for link in ["8gfc", "1gbe"] {
            let e = FcCapped::new(Box::new(NullBackend::new(1)), "null:", FcWire::Fcoe, link)
                .err()
                .unwrap();
            assert!(
                e.to_string()
                    .contains(&format!("fcoe does not run on {link}")),
                "{e}"
            );
        }
    }

    #[test]
    fn its_features_name_the_link_and_how_it_carries_fc() {
        let f = |wire, link| {
            FcCapped::new(Box::new(NullBackend::new(1)), "null:", wire, link)
                .unwrap()
                .features()
        };
        assert!(f(FcWire::Fc, "8gfc").ends_with("capped at the 8gfc FC link's payload rate"));
        assert!(f(FcWire::Fcoe, "10gbe").ends_with("capped at the 10gbe FCoE link's payload rate"));
    }
}
