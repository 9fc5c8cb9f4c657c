//! A preset's figures, as the model uses them (all times in ns, rates in
//! bytes per ns, sizes in bytes). `presets.rs` reads them from TOML with the
//! units people quote (ms, µs, MB/s, MiB) and checks every range.

/// What the devices behind the cache are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Devices {
    /// Spindles: a random access pays a seek (uniform between half and one
    /// and a half times the average) and a rotational wait (uniform over one
    /// revolution); an access that starts where the device's last one ended
    /// pays neither.
    Spindle {
        /// Average seek, ns.
        seek_ns: f64,
        /// One revolution, ns (60 s / rpm).
        revolution_ns: f64,
    },
    /// Flash channels: a fixed access time per operation.
    Flash {
        /// Read access, ns.
        read_ns: f64,
        /// Program (write) access, ns.
        write_ns: f64,
    },
}

/// A separate log device (a ZFS SLOG): synchronous writes complete once it
/// has them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogDevice {
    /// Per-write latency, ns.
    pub latency_ns: f64,
    /// Transfer rate, bytes per ns.
    pub rate: f64,
}

/// The controller's read-ahead (ZFS's file-level prefetch, an array's
/// per-stream prefetch): a read that continues one of the sequential read
/// streams it follows is served from data it fetched ahead by large device
/// reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Readahead {
    /// Streams followed at once.
    pub streams: usize,
    /// How far ahead of its reader a stream is fetched at most, bytes.
    pub distance: u64,
    /// One read-ahead device read, bytes (the stripe spreads it over the
    /// devices, each paying one positioning for its share).
    pub chunk: u64,
    /// A stream idle longer than this may be taken for a new one (the
    /// least recently read first), ns; 0: the least recently read always
    /// may (LRU).
    pub reap_ns: f64,
}

/// Everything the model needs about one preset.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// What the devices are.
    pub devices: Devices,
    /// How many work in parallel (spindles in the RAID set, flash channels).
    pub count: usize,
    /// Stripe unit: consecutive `stripe` bytes live on one device.
    pub stripe: u64,
    /// Each device's media transfer rate, bytes per ns.
    pub transfer: f64,
    /// The host interface (SATA, PCIe) every transfer crosses, bytes per ns;
    /// `None` when it is never the limit.
    pub bus: Option<f64>,
    /// A read cache hit and a write the cache accepts take this long, ns.
    pub cache_ns: f64,
    /// Read cache size, bytes.
    pub read_cache: u64,
    /// Write-back cache size, bytes (0: writes go to the devices), as the
    /// destage counts them ([`Params::destage_bytes`]).
    pub write_cache: u64,
    /// The rate the write-back cache drains data written sequentially to
    /// the devices, bytes per ns (infinite when there is no write-back
    /// cache).
    pub destage: f64,
    /// The unit the devices rewrite (a ZFS record, a WAFL block): a random
    /// write costs the destage every whole unit it touches, however little
    /// of it the write fills; `None`: every write costs its own length.
    pub record: Option<u64>,
    /// The write-back cache survives power loss (NVRAM, power-loss
    /// protection): a synchronous write or a flush completes in the cache.
    pub nvram: bool,
    /// A separate log device for synchronous writes.
    pub log: Option<LogDevice>,
    /// With no separate log device, a flush writes the log records of the
    /// data written since the last one to the devices themselves (ZFS's
    /// intent log on the pool's own disks) instead of waiting for the
    /// write-back cache to drain (a drive's volatile cache).
    pub pool_log: bool,
    /// With `pool_log`: every this many ns the data written since the last
    /// interval (a ZFS transaction group) is written out at the destage
    /// rate, and the log's commits wait while it is; `None`: never.
    pub txg_ns: Option<f64>,
    /// What a write finds when the write-back cache is full: `false`, it
    /// waits for room for its own bytes (writes paced at the destage rate,
    /// as an array's controller does); `true`, writers block until half of
    /// the cache has been written out, and are then let through at cache
    /// speed until it is full again (ZFS's write throttle before 2013: a full
    /// open transaction group waits for the one being synced).
    pub full_blocks: bool,
    /// Sequential read streams fetched ahead (`None`: every read waits
    /// for its own device read).
    pub readahead: Option<Readahead>,
}

impl Params {
    /// The bytes of destage a write of `len` bytes at `offset` costs: its
    /// own length when it continues a sequential stream (`seq`: the records
    /// it fills are filled by its neighbours too) or there is no record;
    /// else every record it touches, whole (a random write into a 128 KiB
    /// ZFS record has the pool write the record).
    pub fn destage_bytes(&self, offset: u64, len: u64, seq: bool) -> u64 {
        match self.record {
            Some(r) if !seq && len > 0 => {
                let records = (offset + len - 1) / r - offset / r + 1;
                (records * r).max(len)
            }
            _ => len,
        }
    }

    /// Mean of [`Params::destage_bytes`] over a write of `bs` bytes at an
    /// offset that is a multiple of `bs`, random with probability `random`.
    /// Over the offsets `k * bs`, a write touches on average
    /// `(bs + r - gcd(bs, r)) / r` records of `r` bytes.
    pub fn destage_bytes_mean(&self, bs: u64, random: f64) -> f64 {
        let own = bs as f64;
        match self.record {
            Some(r) if bs > 0 => {
                let records = (bs + r - gcd(bs, r)) as f64 / r as f64;
                let whole = (records * r as f64).max(own);
                random * whole + (1.0 - random) * own
            }
            _ => own,
        }
    }

    /// Access time of one device operation moving `bytes`, given the hash
    /// value `h` (uniform 64 bits) that draws the seek and rotation, for a
    /// random (`seq` false) or sequential access.
    pub fn device_ns(&self, write: bool, bytes: u64, seq: bool, h: u64) -> f64 {
        let transfer = bytes as f64 / self.transfer;
        match self.devices {
            Devices::Spindle { .. } if seq => transfer,
            Devices::Spindle {
                seek_ns,
                revolution_ns,
            } => {
                let (u1, u2) = (unit(h), unit(h.rotate_left(32)));
                seek_ns * (0.5 + u1) + revolution_ns * u2 + transfer
            }
            Devices::Flash { read_ns, write_ns } => {
                (if write { write_ns } else { read_ns }) + transfer
            }
        }
    }

    /// Mean and second moment of [`Params::device_ns`] for a device
    /// operation moving `bytes`, random with probability `random`.
    pub fn device_moments(&self, write: bool, bytes: u64, random: f64) -> (f64, f64) {
        let t = bytes as f64 / self.transfer;
        match self.devices {
            Devices::Spindle {
                seek_ns,
                revolution_ns,
            } => {
                // seek + rotation: independent uniforms on [s/2, 3s/2] and [0, r].
                let mean = seek_ns + revolution_ns / 2.0 + t;
                let var = seek_ns * seek_ns / 12.0 + revolution_ns * revolution_ns / 12.0;
                let m2_rand = var + mean * mean;
                (
                    random * mean + (1.0 - random) * t,
                    random * m2_rand + (1.0 - random) * t * t,
                )
            }
            Devices::Flash { read_ns, write_ns } => {
                let s = if write { write_ns } else { read_ns } + t;
                (s, s * s)
            }
        }
    }
}

/// Greatest common divisor.
pub(super) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The top 53 bits of `h` as a number in [0, 1).
pub fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}
