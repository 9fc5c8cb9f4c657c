//! What the medium has done, for the lab to say what bound a load point: the
//! model's cumulative counters since its last reset ([`Counters`]: the work
//! each FIFO station has done, read-cache hits and misses, operations and
//! bytes by kind, the dirty data now), the media server's snapshot of them
//! with its time ([`MediaStats`], what it writes into `LOG.stats`; see
//! `serve/`), and two snapshots' difference as shares ([`MediaShares`]: a
//! station's busy share is the work it did over the elapsed time times its
//! copies).

use serde::{Deserialize, Serialize};

/// The version of [`MediaStats`]' JSON.
pub const STATS_VERSION: u32 = 1;

/// The devices behind the caches (spindles, flash channels, controllers;
/// summed over them).
pub const DEVICES: &str = "devices";
/// The write-back cache's drain to the devices.
pub const DESTAGE: &str = "destage";
/// The separate log device.
pub const LOG: &str = "log";
/// The host interface every transfer crosses.
pub const BUS: &str = "bus";
/// ZFS's transaction groups being written out (`txg_s`).
pub const TXG: &str = "txg";

/// One FIFO station of the medium and the work it has done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StationBusy {
    /// Which: [`DEVICES`], [`DESTAGE`], [`LOG`], [`BUS`] or [`TXG`].
    pub name: String,
    /// Work done by the snapshot's time, ns, summed over the copies (work
    /// already queued but not yet due is not counted).
    pub busy_ns: u64,
    /// Identical copies working in parallel (the devices; 1 otherwise).
    pub copies: u32,
}

/// The model's counters since its last reset, as of one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// The stations this medium has, devices first.
    pub stations: Vec<StationBusy>,
    /// Reads.
    pub reads: u64,
    /// The bytes they asked for.
    pub read_bytes: u64,
    /// Reads the read cache served.
    pub read_hits: u64,
    /// Reads it did not (the devices served them).
    pub read_misses: u64,
    /// Bytes the read-ahead read from the devices ahead of sequential
    /// streams (their reads are hits once it has them).
    #[serde(default)]
    pub readahead_bytes: u64,
    /// Writes, synchronous ones included.
    pub writes: u64,
    /// Their bytes.
    pub write_bytes: u64,
    /// Writes that had to be stable when they completed (O_DSYNC, FUA).
    pub sync_writes: u64,
    /// Flushes (fsync, SYNCHRONIZE CACHE, NFS COMMIT).
    pub flushes: u64,
    /// What the write-back cache holds now, bytes, as the destage counts
    /// it (whole records for random writes on a preset with `record_kb`).
    pub dirty_bytes: u64,
}

/// A media server's snapshot of its medium's counters (`LOG.stats`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaStats {
    /// [`STATS_VERSION`].
    pub version: u32,
    /// The media server's PID.
    pub pid: u32,
    /// The medium's name (the preset).
    pub medium: String,
    /// Resets the server has done: the counters start again at each.
    pub resets: u64,
    /// When taken, ns on CLOCK_MONOTONIC (the clock the medium is asked
    /// on; any process of the machine reads the same).
    pub at_ns: u64,
    /// The counters then.
    pub counters: Counters,
}

/// One station's busy share over an interval.
#[derive(Clone, Debug, PartialEq)]
pub struct StationShare {
    /// Which ([`StationBusy::name`]).
    pub name: String,
    /// The work it did over the elapsed time times its copies, 0 to 1.
    pub busy: f64,
}

/// What the medium did between two snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaShares {
    /// The medium's name.
    pub medium: String,
    /// The interval, ns.
    pub elapsed_ns: u64,
    /// Each station's busy share, in the snapshots' order (devices first).
    pub stations: Vec<StationShare>,
    /// Reads in the interval.
    pub reads: u64,
    /// Their bytes.
    pub read_bytes: u64,
    /// Reads the read cache served in the interval.
    pub read_hits: u64,
    /// Reads it did not.
    pub read_misses: u64,
    /// Bytes the read-ahead read from the devices in the interval.
    pub readahead_bytes: u64,
    /// Writes in the interval.
    pub writes: u64,
    /// Their bytes.
    pub write_bytes: u64,
    /// Synchronous writes in the interval.
    pub sync_writes: u64,
    /// Flushes in the interval.
    pub flushes: u64,
    /// What the write-back cache held at the interval's end, bytes.
    pub dirty_bytes: u64,
}

impl MediaShares {
    /// The share of reads the read cache served (`None`: no reads).
    pub fn read_hit_share(&self) -> Option<f64> {
        let n = self.read_hits + self.read_misses;
        (n > 0).then(|| self.read_hits as f64 / n as f64)
    }

    /// The busy share of the station `name`, if the medium has it.
    pub fn busy(&self, name: &str) -> Option<f64> {
        self.stations
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.busy)
    }

    /// The busiest station (the first of equals; `None`: no stations).
    pub fn busiest(&self) -> Option<&StationShare> {
        self.stations
            .iter()
            .fold(None, |best: Option<&StationShare>, s| match best {
                Some(b) if b.busy >= s.busy => Some(b),
                _ => Some(s),
            })
    }
}

impl MediaStats {
    /// The snapshot as `LOG.stats` holds it (one line of JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the stats serialize")
    }

    /// A snapshot read from `text`; `label` names the file in errors. A
    /// version other than [`STATS_VERSION`] is refused naming both.
    pub fn parse(text: &str, label: &str) -> Result<MediaStats, String> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{label}: not the media server's statistics: {e}"))?;
        match v.get("version").and_then(|v| v.as_u64()) {
            Some(n) if n == u64::from(STATS_VERSION) => {}
            Some(n) => {
                return Err(format!(
                    "{label}: statistics version {n}, this storlab reads version {STATS_VERSION} \
                     (a media server of another storlab)"
                ));
            }
            None => return Err(format!("{label}: no statistics version")),
        }
        serde_json::from_value(v).map_err(|e| format!("{label}: {e}"))
    }

    /// What the medium did from `earlier` to this snapshot: each station's
    /// busy share (its work over the elapsed time times its copies), the
    /// counts in between and the dirty data at the end. Refused, saying
    /// why, when the two are not from one server, the medium was reset in
    /// between (its counters started again), or `earlier` is not earlier.
    pub fn since(&self, earlier: &MediaStats) -> Result<MediaShares, String> {
        if earlier.pid != self.pid || earlier.medium != self.medium {
            return Err(format!(
                "media statistics of two servers (pid {} on {}, pid {} on {})",
                earlier.pid, earlier.medium, self.pid, self.medium
            ));
        }
        if earlier.resets != self.resets {
            return Err(format!(
                "media server pid {} reset its medium between the two snapshots (resets {} then \
                 {}): take the first after the reset",
                self.pid, earlier.resets, self.resets
            ));
        }
        if self.at_ns <= earlier.at_ns {
            return Err(format!(
                "media statistics not in order: taken at {} ns, then at {} ns",
                earlier.at_ns, self.at_ns
            ));
        }
        let (a, b) = (&earlier.counters, &self.counters);
        let elapsed_ns = self.at_ns - earlier.at_ns;
        let mut stations = Vec::new();
        for s in &b.stations {
            let before = a.stations.iter().find(|x| x.name == s.name);
            let done = s.busy_ns.saturating_sub(before.map_or(0, |x| x.busy_ns));
            let busy = done as f64 / (elapsed_ns as f64 * f64::from(s.copies.max(1)));
            stations.push(StationShare {
                name: s.name.clone(),
                busy: busy.min(1.0),
            });
        }
        let d = |x: u64, y: u64| y.saturating_sub(x);
        Ok(MediaShares {
            medium: self.medium.clone(),
            elapsed_ns,
            stations,
            reads: d(a.reads, b.reads),
            read_bytes: d(a.read_bytes, b.read_bytes),
            read_hits: d(a.read_hits, b.read_hits),
            read_misses: d(a.read_misses, b.read_misses),
            readahead_bytes: d(a.readahead_bytes, b.readahead_bytes),
            writes: d(a.writes, b.writes),
            write_bytes: d(a.write_bytes, b.write_bytes),
            sync_writes: d(a.sync_writes, b.sync_writes),
            flushes: d(a.flushes, b.flushes),
            dirty_bytes: b.dirty_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(at_ns: u64, devices_busy: u64, reads: u64, hits: u64) -> MediaStats {
        MediaStats {
            version: STATS_VERSION,
            pid: 42,
            medium: "raidz-sata".into(),
            resets: 3,
            at_ns,
            counters: Counters {
                stations: vec![
                    StationBusy {
                        name: DEVICES.into(),
                        busy_ns: devices_busy,
                        copies: 2,
                    },
                    StationBusy {
                        name: DESTAGE.into(),
                        busy_ns: at_ns / 10,
                        copies: 1,
                    },
                ],
                reads,
                read_bytes: reads * 8192,
                read_hits: hits,
                read_misses: reads - hits,
                dirty_bytes: 1 << 20,
                ..Counters::default()
            },
        }
    }

    #[test]
    fn shares_are_the_work_over_the_elapsed_time_times_the_copies() {
        let a = snapshot(1_000_000_000, 500_000_000, 100, 10);
        // 1 s later both devices did 0.9 s of work each; the destage 0.1 s.
        let b = snapshot(2_000_000_000, 2_300_000_000, 300, 30);
        let s = b.since(&a).unwrap();
        assert_eq!(s.elapsed_ns, 1_000_000_000);
        assert!((s.busy(DEVICES).unwrap() - 0.9).abs() < 1e-12, "{s:?}");
        assert!((s.busy(DESTAGE).unwrap() - 0.1).abs() < 1e-12, "{s:?}");
        assert_eq!(s.busy(LOG), None);
        assert_eq!(s.busiest().unwrap().name, DEVICES);
        assert_eq!((s.reads, s.read_bytes), (200, 200 * 8192));
        assert!((s.read_hit_share().unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(s.dirty_bytes, 1 << 20);
    }

    #[test]
    fn a_reset_another_server_or_the_wrong_order_is_refused_saying_so() {
        let a = snapshot(1_000_000_000, 0, 100, 10);
        let mut b = snapshot(2_000_000_000, 0, 0, 0);
        b.resets += 1;
        let e = b.since(&a).unwrap_err();
        assert!(e.contains("reset its medium between"), "{e}");
        let mut c = snapshot(2_000_000_000, 0, 100, 10);
        c.pid = 7;
        assert!(c.since(&a).unwrap_err().contains("two servers"));
        let e = a.since(&snapshot(2_000_000_000, 0, 100, 10)).unwrap_err();
        assert!(e.contains("not in order"), "{e}");
    }

    #[test]
    fn the_file_round_trips_and_another_version_is_named() {
        let a = snapshot(5, 1, 2, 1);
        assert_eq!(MediaStats::parse(&a.to_json(), "f").unwrap(), a);
        let other = a.to_json().replace("\"version\":1", "\"version\":9");
        let e = MediaStats::parse(&other, "media.stats").unwrap_err();
        assert!(
            e.starts_with("media.stats: statistics version 9") && e.contains("version 1"),
            "{e}"
        );
        assert!(MediaStats::parse("take", "media.stats").is_err());
    }
}
