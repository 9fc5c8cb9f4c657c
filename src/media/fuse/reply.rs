//! Replies to the kernel, sent at once or held until their due time.
//!
//! A data operation's reply is due when the [`crate::media::Medium`] says the
//! operation completes. The reader thread that did the I/O sends it itself if
//! that time has passed; otherwise it hands it to the one [`Timer`] thread,
//! which keeps every held reply in a heap ordered by due time and sends each
//! when its time comes: however many operations are in flight, no thread
//! sleeps per request.

use super::abi::{OutHeader, Pod};
use super::sys::{self, Errno};
use std::collections::BinaryHeap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One reply: the header's room, then the payload.
#[derive(Debug)]
pub struct Reply {
    buf: Vec<u8>,
    error: i32,
}

const HEADER: usize = size_of::<OutHeader>();

impl Reply {
    /// Success with no payload.
    pub fn ok() -> Reply {
        Reply::with_capacity(0)
    }

    /// Failure with `e` (passed on as the kernel wants it: negative).
    pub fn err(e: Errno) -> Reply {
        Reply {
            buf: vec![0; HEADER],
            error: -e.0,
        }
    }

    /// Success with `v` as the payload.
    pub fn of<T: Pod>(v: &T) -> Reply {
        let mut r = Reply::with_capacity(size_of::<T>());
        r.buf.extend_from_slice(v.bytes());
        r
    }

    /// Success, room for a payload of `n` bytes to be appended with
    /// [`Reply::payload`].
    pub fn with_capacity(n: usize) -> Reply {
        let mut buf = Vec::with_capacity(HEADER + n);
        buf.resize(HEADER, 0);
        Reply { buf, error: 0 }
    }

    /// The payload, to append to.
    pub fn payload(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Write the header for request `unique` and send the whole reply on `chan`.
    /// A reply to a request the kernel has since dropped (ENOENT: interrupted
    /// or aborted) is not an error.
    pub fn send(mut self, chan: &OwnedFd, unique: u64) {
        let h = OutHeader {
            len: self.buf.len() as u32,
            error: self.error,
            unique,
        };
        self.buf[..HEADER].copy_from_slice(h.bytes());
        // A failed reply can only be reported, not retried: the kernel has
        // either taken it whole or refused it (ENOENT: the request is gone).
        let _ = sys::write(chan.as_fd(), &self.buf);
    }
}

/// How late replies went out after their due time.
#[derive(Debug, Default)]
pub struct Lateness {
    /// Replies counted.
    pub count: AtomicU64,
    /// Sum of their lateness, ns.
    pub sum_ns: AtomicU64,
    /// The latest, ns.
    pub max_ns: AtomicU64,
}

impl Lateness {
    /// Count a reply sent `late_ns` after its due time.
    pub fn add(&self, late_ns: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(late_ns, Ordering::Relaxed);
        self.max_ns.fetch_max(late_ns, Ordering::Relaxed);
    }

    /// Count, mean and max lateness in µs.
    pub fn summary(&self) -> (u64, f64, f64) {
        let n = self.count.load(Ordering::Relaxed);
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64;
        let mean = if n == 0 { 0.0 } else { sum / n as f64 / 1e3 };
        (n, mean, self.max_ns.load(Ordering::Relaxed) as f64 / 1e3)
    }
}

/// How long before a due time the timer thread sets its sleep to end: the
/// recent lateness of its timed sleeps (a moving average), at most
/// [`Lead::MAX_NS`], so that one preemption does not make replies early by
/// milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lead {
    /// Moving average of how late a timed sleep ended, ns.
    late_ns: u64,
}

impl Lead {
    /// The longest lead, ns.
    pub const MAX_NS: u64 = 100_000;

    /// A timed sleep ended `late_ns` after the time it was set for.
    pub fn observe(&mut self, late_ns: u64) {
        // Weight 1/8: one long preemption moves the lead a little.
        let late = late_ns.min(Lead::MAX_NS);
        self.late_ns = (self.late_ns * 7 + late) / 8;
    }

    /// Set a sleep to end this long before the due time, ns.
    pub fn ns(&self) -> u64 {
        self.late_ns.min(Lead::MAX_NS)
    }
}

/// A reply waiting for its due time.
struct Pending {
    due: u64,
    seq: u64,
    chan: Arc<OwnedFd>,
    unique: u64,
    reply: Reply,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// Reversed: the heap's top is the earliest due (then the first queued).
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.due, o.seq).cmp(&(self.due, self.seq))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Pending>,
    seq: u64,
    stop: bool,
}

/// The timer queue of held replies and the thread that sends them.
#[derive(Default)]
pub struct Timer {
    /// Whether sleeps end [`Lead::ns`] early (see [`Timer::run`]); without,
    /// no reply goes out before its due time.
    pub lead: bool,
    state: Mutex<State>,
    wake: Condvar,
    /// Lateness of the replies this timer sent.
    pub late: Lateness,
    /// Whether the thread runs real-time (see [`Timer::run`]).
    pub realtime: std::sync::atomic::AtomicBool,
}

impl Timer {
    /// A timer with or without the lead (see [`Timer::lead`]).
    pub fn new(lead: bool) -> Timer {
        Timer {
            lead,
            ..Timer::default()
        }
    }

    /// Hold `reply` to request `unique` (read on `chan`) until `due` ns.
    pub fn push(&self, due: u64, chan: Arc<OwnedFd>, unique: u64, reply: Reply) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let earliest = st.heap.peek().is_none_or(|p| due < p.due);
        st.seq += 1;
        let seq = st.seq;
        st.heap.push(Pending {
            due,
            seq,
            chan,
            unique,
            reply,
        });
        drop(st);
        if earliest {
            self.wake.notify_one();
        }
    }

    /// Replies held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .heap
            .len()
    }

    /// The thread's body: send each reply at its due time; after [`Timer::stop`],
    /// send what is left at once and return.
    ///
    /// A timed sleep ends late (tens of µs on a loaded VM, however small the
    /// timer slack), and a reply sent after its due time makes the medium
    /// slower than its model. So the thread sets each sleep [`Lead::ns`]
    /// before the due time, learning the lead from how late its sleeps end,
    /// and sends every reply whose due time is within the lead: on average a
    /// reply goes out at its due time, not one wake-up later. With
    /// [`Timer::lead`] on it also asks to run real-time (SCHED_FIFO 1); off,
    /// the lead stays 0 and the thread is an ordinary one. It never spins
    /// (on 2 cores that would take a core from the readers and the clients).
    pub fn run(&self) {
        sys::set_timer_slack(1);
        if self.lead {
            // A device's times do not depend on what else the host runs: the
            // thread that keeps them preempts ordinary work (it only sleeps
            // and sends, never spins; the kernel's RT throttling bounds it).
            self.realtime.store(sys::set_realtime(1), Ordering::Relaxed);
        }
        let mut lead = Lead::default();
        let learn = self.lead;
        let mut ready = Vec::new();
        loop {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let now = sys::now_ns();
                let aim = now + lead.ns();
                match st.heap.peek() {
                    None if st.stop => return,
                    None => st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner()),
                    Some(p) if p.due <= aim || st.stop => {
                        while st.heap.peek().is_some_and(|p| p.due <= aim || st.stop) {
                            ready.extend(st.heap.pop());
                        }
                        break;
                    }
                    Some(p) => {
                        let target = p.due - lead.ns();
                        let (g, r) = self
                            .wake
                            .wait_timeout(st, Duration::from_nanos(target - now))
                            .unwrap_or_else(|e| e.into_inner());
                        st = g;
                        if r.timed_out() && learn {
                            lead.observe(sys::now_ns().saturating_sub(target));
                        }
                    }
                }
            }
            drop(st);
            for p in ready.drain(..) {
                self.late.add(sys::now_ns().saturating_sub(p.due));
                p.reply.send(&p.chan, p.unique);
            }
        }
    }

    /// Ask the thread to send what it holds and end.
    pub fn stop(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    /// A pipe: the timer writes replies into one end, the test reads the other.
    fn pipe() -> (Arc<OwnedFd>, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both were just created and are owned by nobody else.
        unsafe {
            (
                Arc::new(OwnedFd::from_raw_fd(fds[1])),
                OwnedFd::from_raw_fd(fds[0]),
            )
        }
    }

    #[test]
    fn replies_go_out_in_due_order_no_earlier_than_due() {
        let timer = Arc::new(Timer::default());
        let t = {
            let timer = timer.clone();
            std::thread::spawn(move || timer.run())
        };
        let (w, r) = pipe();
        let start = sys::now_ns();
        // Queued out of order: 30 ms, 10 ms, 20 ms.
        for (ms, unique) in [(30u64, 3u64), (10, 1), (20, 2)] {
            timer.push(start + ms * 1_000_000, w.clone(), unique, Reply::ok());
        }
        let mut seen = Vec::new();
        for _ in 0..3 {
            let mut buf = [0u8; 16];
            assert_eq!(sys::read(r.as_fd(), &mut buf).unwrap(), 16);
            let h = OutHeader::read(&buf).unwrap();
            let at = sys::now_ns() - start;
            assert!(
                at >= h.unique * 10_000_000,
                "reply {} sent after {at} ns",
                h.unique
            );
            seen.push(h.unique);
        }
        assert_eq!(seen, [1, 2, 3]);
        let (n, mean_us, _) = timer.late.summary();
        assert_eq!(n, 3);
        // Bounded, not tight: a loaded 2-core machine delays wake-ups by ms.
        assert!(mean_us < 50_000.0, "mean lateness {mean_us} µs");
        timer.stop();
        t.join().unwrap();
    }

    #[test]
    fn stop_sends_what_is_held_at_once() {
        let timer = Arc::new(Timer::default());
        let (w, r) = pipe();
        timer.push(
            sys::now_ns() + 3_600_000_000_000,
            w,
            9,
            Reply::err(Errno(5)),
        );
        assert_eq!(timer.held(), 1);
        timer.stop();
        timer.run();
        let mut buf = [0u8; 16];
        assert_eq!(sys::read(r.as_fd(), &mut buf).unwrap(), 16);
        let h = OutHeader::read(&buf).unwrap();
        assert_eq!((h.unique, h.error, h.len), (9, -5, 16));
    }

    #[test]
    fn the_lead_follows_late_wake_ups_within_its_bound() {
        let mut l = Lead::default();
        assert_eq!(l.ns(), 0);
        // Sleeps that end 40 µs late: the lead settles near 40 µs.
        for _ in 0..100 {
            l.observe(40_000);
        }
        let settled = l.ns();
        assert!((39_000..=40_000).contains(&settled), "{settled}");
        // One 5 ms preemption moves it a little, not to 5 ms.
        l.observe(5_000_000);
        assert!(l.ns() > settled && l.ns() < 60_000, "{}", l.ns());
        // Never beyond the bound, whatever it sees.
        for _ in 0..100 {
            l.observe(u64::MAX);
        }
        assert!(l.ns() <= Lead::MAX_NS && l.ns() > Lead::MAX_NS * 9 / 10);
        // Punctual wake-ups bring it back to nothing.
        for _ in 0..200 {
            l.observe(0);
        }
        assert_eq!(l.ns(), 0);
    }
}
