//! CPU accounting: what the benchmark process costs and how busy the host is.
//!
//! Process time is cumulative, so every reading is turned into a delta over
//! an interval ([`CpuMeter`]); deltas add, host busy percentages average.

use serde::{Deserialize, Serialize};
use std::io;
use std::ops::Sub;

/// Cumulative user and system CPU time of a process, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcCpu {
    /// Time spent in user mode.
    pub user_s: f64,
    /// Time spent in the kernel on the process's behalf.
    pub sys_s: f64,
    /// Context switches, voluntary and involuntary (from getrusage; 0 from
    /// [`ProcCpu::of_pid`], which reads only the times).
    pub ctx: u64,
}

fn timeval_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

fn rusage(who: libc::c_int) -> ProcCpu {
    // SAFETY: rusage is plain old data, so all-zero is a valid value, and
    // getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        // Only EINVAL (bad `who`) is possible and both callers pass constants.
        return ProcCpu::default();
    }
    ProcCpu {
        user_s: timeval_s(ru.ru_utime),
        sys_s: timeval_s(ru.ru_stime),
        ctx: (ru.ru_nvcsw.max(0) + ru.ru_nivcsw.max(0)) as u64,
    }
}

impl ProcCpu {
    /// CPU time of this process (all threads) so far.
    pub fn this_process() -> ProcCpu {
        rusage(libc::RUSAGE_SELF)
    }

    /// CPU time of waited-for children (e.g. an external load tool) so far.
    pub fn children() -> ProcCpu {
        rusage(libc::RUSAGE_CHILDREN)
    }

    /// CPU time of any process, from `/proc/PID/stat`.
    pub fn of_pid(pid: i32) -> io::Result<ProcCpu> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let (utime, stime) = parse_pid_stat(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("cannot parse utime/stime from /proc/{pid}/stat"),
            )
        })?;
        let tck = clock_ticks();
        Ok(ProcCpu {
            user_s: utime as f64 / tck,
            sys_s: stime as f64 / tck,
            ctx: 0,
        })
    }

    /// User plus system seconds.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

impl Sub for ProcCpu {
    type Output = ProcCpu;
    fn sub(self, rhs: ProcCpu) -> ProcCpu {
        ProcCpu {
            user_s: self.user_s - rhs.user_s,
            sys_s: self.sys_s - rhs.sys_s,
            ctx: self.ctx.saturating_sub(rhs.ctx),
        }
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // USER_HZ is 100 on every Linux ABI; the fallback only guards a failed call.
    if t > 0 { t as f64 } else { 100.0 }
}

/// `(utime, stime)` in clock ticks from the text of `/proc/PID/stat`.
///
/// The comm field (2) is in parentheses and may itself contain spaces and
/// `)`, so fields are counted from after the last `)`: field 3 (state) is the
/// first there, making utime (14) and stime (15) the 12th and 13th.
fn parse_pid_stat(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime = fields.next()?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// Cumulative CPU time of each thread of a process, from
/// `/proc/PID/task/*/stat`: which thread is busiest tells a saturated event
/// loop apart from a process whose threads share the load.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadsCpu {
    /// (thread id, user + system seconds so far), by thread id.
    threads: Vec<(u32, f64)>,
}

/// What a process's threads used between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadsUse {
    /// CPU seconds of all its threads together.
    pub total_s: f64,
    /// CPU seconds of its busiest thread.
    pub busiest_s: f64,
    /// Threads that used any CPU.
    pub busy_threads: u32,
}

impl ThreadsCpu {
    /// The threads of `pid` now (`std::process::id()` for this process).
    pub fn of_pid(pid: u32) -> io::Result<ThreadsCpu> {
        let tck = clock_ticks();
        let mut threads = Vec::new();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            let entry = entry?;
            let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            // A thread may end between the listing and the read: skip it.
            let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some((u, s)) = parse_pid_stat(&text) {
                threads.push((tid, (u + s) as f64 / tck));
            }
        }
        threads.sort_by_key(|t| t.0);
        Ok(ThreadsCpu { threads })
    }

    /// What the threads used since `earlier` (threads started meanwhile count
    /// from zero; threads that ended are gone from both totals).
    pub fn used_since(&self, earlier: &ThreadsCpu) -> ThreadsUse {
        let mut u = ThreadsUse::default();
        for &(tid, now) in &self.threads {
            let before = earlier
                .threads
                .binary_search_by_key(&tid, |t| t.0)
                .map_or(0.0, |i| earlier.threads[i].1);
            let d = (now - before).max(0.0);
            u.total_s += d;
            u.busiest_s = u.busiest_s.max(d);
            if d > 0.0 {
                u.busy_threads += 1;
            }
        }
        u
    }
}

/// Host-wide cumulative CPU ticks from the first line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCpu {
    busy: u64,
    total: u64,
}

impl HostCpu {
    /// Reads the aggregate `cpu` line of `/proc/stat`.
    pub fn read() -> io::Result<Self> {
        let text = std::fs::read_to_string("/proc/stat")?;
        text.lines()
            .next()
            .and_then(parse_host_stat)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "cannot parse the cpu line of /proc/stat",
                )
            })
    }

    /// Percentage (0..=100) of all CPUs' time that was busy between `earlier`
    /// and `self`; 0 if no time passed.
    pub fn busy_pct_since(&self, earlier: &HostCpu) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        if total == 0 {
            return 0.0;
        }
        let busy = self.busy.saturating_sub(earlier.busy).min(total);
        100.0 * busy as f64 / total as f64
    }
}

/// Parses `cpu  user nice system idle iowait irq softirq steal guest guest_nice`.
///
/// guest and guest_nice are already included in user and nice, so only the
/// first eight are summed. iowait counts as idle: the CPU was free to run
/// something else.
fn parse_host_stat(line: &str) -> Option<HostCpu> {
    let mut it = line.split_ascii_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = it.take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    // Kernels before 2.6 had only four fields; treat missing ones as zero.
    if v.len() < 4 {
        return None;
    }
    let total: u64 = v.iter().sum();
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some(HostCpu {
        busy: total - idle,
        total,
    })
}

/// CPUs online on this machine.
pub fn online_cores() -> u32 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as u32 } else { 1 }
}

/// CPU cost over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSample {
    /// User seconds this process used in the interval.
    pub proc_user_s: f64,
    /// System seconds this process used in the interval.
    pub proc_sys_s: f64,
    /// Busy share of all host CPUs in the interval, 0..=100.
    pub host_busy_pct: f64,
    /// Online CPUs.
    pub cores: u32,
    /// Context switches of this process (voluntary and involuntary) in the
    /// interval; records without it read as 0.
    #[serde(default)]
    pub ctx: u64,
}

impl CpuSample {
    /// Folds several intervals: seconds add, busy % is the plain mean (the
    /// intervals are assumed to be of similar length), cores is the largest.
    /// Empty input gives all zeros.
    pub fn combine(samples: &[CpuSample]) -> CpuSample {
        if samples.is_empty() {
            return CpuSample::default();
        }
        CpuSample {
            proc_user_s: samples.iter().map(|s| s.proc_user_s).sum(),
            proc_sys_s: samples.iter().map(|s| s.proc_sys_s).sum(),
            host_busy_pct: samples.iter().map(|s| s.host_busy_pct).sum::<f64>()
                / samples.len() as f64,
            cores: samples.iter().map(|s| s.cores).max().unwrap_or(0),
            ctx: samples.iter().map(|s| s.ctx).sum(),
        }
    }
}

/// Turns cumulative readings into per-interval [`CpuSample`]s.
#[derive(Clone, Debug)]
pub struct CpuMeter {
    proc: ProcCpu,
    /// `None` where `/proc/stat` is unreadable; host busy is then reported as 0.
    host: Option<HostCpu>,
    cores: u32,
}

impl Default for CpuMeter {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuMeter {
    /// Starts measuring from now.
    pub fn new() -> Self {
        CpuMeter {
            proc: ProcCpu::this_process(),
            host: HostCpu::read().ok(),
            cores: online_cores(),
        }
    }

    /// CPU used since the previous call (or since `new`).
    pub fn sample(&mut self) -> CpuSample {
        let proc = ProcCpu::this_process();
        let host = HostCpu::read().ok();
        let d = proc - self.proc;
        let busy = match (&host, &self.host) {
            (Some(now), Some(then)) => now.busy_pct_since(then),
            _ => 0.0,
        };
        self.proc = proc;
        self.host = host;
        CpuSample {
            proc_user_s: d.user_s.max(0.0),
            proc_sys_s: d.sys_s.max(0.0),
            host_busy_pct: busy,
            cores: self.cores,
            ctx: d.ctx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_switches_are_counted() {
        let mut m = CpuMeter::new();
        // Each sleep gives up the CPU: a voluntary context switch.
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(m.sample().ctx >= 5);
    }

    #[test]
    fn pid_stat_with_nasty_comm() {
        let line = "1234 (my) (evil prog)) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    250 75 0 0 20 0 1 0 12345 1000000 200 18446744073709551615\n";
        assert_eq!(parse_pid_stat(line), Some((250, 75)));
        assert_eq!(parse_pid_stat("1 (x) S 1 2"), None);
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    #[test]
    fn host_stat_line() {
        let h = parse_host_stat("cpu  100 5 50 800 40 3 2 0 7 1").unwrap();
        assert_eq!(h.total, 1000);
        assert_eq!(h.busy, 160);
        let later = parse_host_stat("cpu  150 5 100 1000 40 3 2 0 7 1").unwrap();
        assert!((later.busy_pct_since(&h) - 100.0 * 100.0 / 300.0).abs() < 1e-9);
        assert_eq!(h.busy_pct_since(&h), 0.0);
        assert_eq!(h.busy_pct_since(&later), 0.0);
        assert!(parse_host_stat("cpu0 1 2 3 4").is_none());
        assert!(parse_host_stat("cpu 1 x 3 4").is_none());
    }

    #[test]
    fn own_pid_readable() {
        let me = ProcCpu::of_pid(std::process::id() as i32).unwrap();
        assert!(me.user_s >= 0.0 && me.sys_s >= 0.0);
        assert!(ProcCpu::of_pid(-5).is_err());
    }

    #[test]
    fn meter_deltas_are_sane() {
        let mut m = CpuMeter::new();
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed() < std::time::Duration::from_millis(60) {
            for i in 0..10_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
        let s = m.sample();
        assert!(s.proc_user_s >= 0.0 && s.proc_sys_s >= 0.0);
        assert!(s.proc_user_s + s.proc_sys_s > 0.0, "{s:?}");
        assert!((0.0..=100.0).contains(&s.host_busy_pct), "{s:?}");
        assert!(s.cores >= 1);
        let s2 = m.sample();
        assert!(s2.proc_user_s >= 0.0 && s2.proc_sys_s >= 0.0);
        assert!((0.0..=100.0).contains(&s2.host_busy_pct));
    }

    #[test]
    fn combine_sums_and_averages() {
        let a = CpuSample {
            proc_user_s: 1.0,
            proc_sys_s: 0.5,
            host_busy_pct: 20.0,
            cores: 8,
            ctx: 0,
        };
        let b = CpuSample {
            proc_user_s: 2.0,
            proc_sys_s: 0.25,
            host_busy_pct: 40.0,
            cores: 8,
            ctx: 0,
        };
        let c = CpuSample::combine(&[a, b]);
        assert_eq!(c.proc_user_s, 3.0);
        assert_eq!(c.proc_sys_s, 0.75);
        assert_eq!(c.host_busy_pct, 30.0);
        assert_eq!(c.cores, 8);
        assert_eq!(CpuSample::combine(&[]), CpuSample::default());
    }

    #[test]
    fn the_busiest_thread_is_told_apart_from_the_total() {
        let me = std::process::id();
        let before = ThreadsCpu::of_pid(me).unwrap();
        // One thread spins for 300 ms while this one sleeps.
        let spin = std::thread::spawn(|| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < std::time::Duration::from_millis(300) {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            x
        });
        // Read while the spinner still lives (an ended thread leaves /proc).
        std::thread::sleep(std::time::Duration::from_millis(280));
        let after = ThreadsCpu::of_pid(me).unwrap();
        spin.join().unwrap();
        let u = after.used_since(&before);
        assert!(u.busiest_s >= 0.1, "{u:?}");
        assert!(u.total_s >= u.busiest_s, "{u:?}");
        assert!(u.busy_threads >= 1, "{u:?}");
        assert_eq!(after.used_since(&after).total_s, 0.0);
    }
}
