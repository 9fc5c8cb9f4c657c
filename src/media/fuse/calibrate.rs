//! The server's own cost, measured at mount and charged against the medium.
//!
//! A client's read of the mounted store takes longer than the medium's time:
//! the request crosses the kernel to a reader thread (`arrival` is taken only
//! then), and the reply crosses back and wakes the client. A real device has
//! none of that, so an emulated one that holds each reply until
//! `arrival + service` is slower than its model by that round trip (about
//! 25 µs on a 2-core VM, half an NVMe SSD's read). [`probe`] measures it
//! once the file system is mounted: the mounting thread reads a probe file
//! through the mount, the server holds each probe read for [`PROBE_HOLD_NS`]
//! (no medium involved), and what the reader saw beyond the hold is the
//! overhead. [`charge`] then makes a reply due `overhead` earlier, never
//! before the request arrived: the client sees about the medium's own time.
//! A medium slower than the overhead (every flash and spindle preset) keeps
//! its times; the overhead only stops being added to them.

use super::fs::Fs;
use super::sys;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::Ordering;

/// How long the server holds each probe read, ns: about an SSD's read, so the
/// probe pays what a held reply pays (the timer, waking an idle client).
pub const PROBE_HOLD_NS: u64 = 100_000;
/// Probe reads timed, after `WARMUP` untimed ones (in which the timer also
/// learns its lead, see `reply::Lead`, which the probe must not count again).
const SAMPLES: usize = 200;
const WARMUP: usize = 50;
/// The largest overhead charged, ns: a probe on a starved machine must not
/// make every reply early by milliseconds.
pub const MAX_OVERHEAD_NS: u64 = 200_000;
/// Bytes in the probe file (its reads cycle through it).
const PROBE_BYTES: usize = 64 * 4096;

/// The overhead the probe reads show: the median of their latencies as the
/// reader saw them, less the hold, at most [`MAX_OVERHEAD_NS`] (0 with no
/// samples). The median, not the minimum: a held reply pays the usual
/// wake-ups, not the luckiest.
pub fn overhead_ns(samples_ns: &mut [u64], hold_ns: u64) -> u64 {
    if samples_ns.is_empty() {
        return 0;
    }
    samples_ns.sort_unstable();
    let median = samples_ns[samples_ns.len() / 2];
    median.saturating_sub(hold_ns).min(MAX_OVERHEAD_NS)
}

/// When to send the reply to a request that arrived at `arrival_ns` and that
/// the medium completes at `due_ns`: `overhead_ns` earlier, never before it
/// arrived.
pub fn charge(due_ns: u64, arrival_ns: u64, overhead_ns: u64) -> u64 {
    due_ns.saturating_sub(overhead_ns).max(arrival_ns)
}

/// Measure the overhead on the file system `fs` mounted at `mountpoint` over
/// `backing`, and start charging it (see the module's text). The probe file
/// lives in `backing` for the few ms this takes, then is removed.
pub fn probe(fs: &Fs, backing: &Path, mountpoint: &Path) -> Result<u64, String> {
    let name = format!(".storlab-media-probe-{}", std::process::id());
    let back = backing.join(&name);
    std::fs::write(&back, vec![0u8; PROBE_BYTES])
        .map_err(|e| format!("cannot write the probe file {}: {e}", back.display()))?;
    let measured = measure(fs, &mountpoint.join(&name));
    let _ = std::fs::remove_file(&back);
    let overhead = measured?;
    fs.overhead_ns.store(overhead, Ordering::Relaxed);
    Ok(overhead)
}

/// Time the probe reads of `file` (through the mount), as this thread.
fn measure(fs: &Fs, file: &Path) -> Result<u64, String> {
    let f = sys::open(
        file.as_os_str().as_encoded_bytes(),
        libc::O_RDONLY | libc::O_DIRECT | libc::O_CLOEXEC,
        0,
    )
    .map_err(|e| format!("cannot open the probe file {}: {e}", file.display()))?;
    // O_DIRECT wants an aligned buffer: a 4 KiB slice of an 8 KiB vector.
    let mut buf = vec![0u8; 8192];
    let skip = buf.as_ptr().align_offset(4096);
    fs.probe_tid.store(sys::gettid(), Ordering::Relaxed);
    let mut samples = Vec::with_capacity(SAMPLES);
    let mut failed = None;
    for i in 0..WARMUP + SAMPLES {
        let offset = (i * 4096 % PROBE_BYTES) as u64;
        let t = sys::now_ns();
        match sys::pread_full(f.as_fd(), &mut buf[skip..skip + 4096], offset) {
            Ok(4096) => {}
            Ok(n) => failed = Some(format!("short read of {n} bytes")),
            Err(e) => failed = Some(e.to_string()),
        }
        if failed.is_some() {
            break;
        }
        if i >= WARMUP {
            samples.push(sys::now_ns() - t);
        }
    }
    fs.probe_tid.store(0, Ordering::Relaxed);
    if let Some(e) = failed {
        return Err(format!("probe read of {}: {e}", file.display()));
    }
    Ok(overhead_ns(&mut samples, PROBE_HOLD_NS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_is_the_median_beyond_the_hold_and_bounded() {
        // Reads of 120 µs under a 100 µs hold, one preempted for 9 ms.
        let mut s = vec![121_000, 119_000, 9_000_000, 120_000, 122_000];
        assert_eq!(overhead_ns(&mut s, 100_000), 21_000);
        // Faster than the hold (a clock step): nothing is charged.
        assert_eq!(overhead_ns(&mut [90_000, 95_000, 99_000], 100_000), 0);
        assert_eq!(overhead_ns(&mut [], 100_000), 0);
        // A starved machine: the charge stops at the bound.
        assert_eq!(
            overhead_ns(&mut [5_000_000, 6_000_000, 7_000_000], 100_000),
            MAX_OVERHEAD_NS
        );
    }

    #[test]
    fn a_reply_is_due_the_overhead_earlier_never_before_its_arrival() {
        // Virtual time, ns: arrival 1 000, medium's time 101 000.
        assert_eq!(charge(101_000, 1_000, 25_000), 76_000);
        assert_eq!(charge(101_000, 1_000, 0), 101_000);
        // A medium faster than the overhead: sent as soon as it can be.
        assert_eq!(charge(11_000, 1_000, 25_000), 1_000);
        assert_eq!(charge(101_000, 1_000, u64::MAX), 1_000);
        // Never later than the medium's time, whatever the overhead.
        for o in [0, 1, 50_000, 100_000, 200_000] {
            let d = charge(101_000, 1_000, o);
            assert!((1_000..=101_000).contains(&d), "{o}: {d}");
        }
    }
}
