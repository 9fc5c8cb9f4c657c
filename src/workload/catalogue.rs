//! Built-in workloads: every workload and suite of WORKLOADS.md, mapped from
//! the reference studies, each in a full profile (the study's own sizes and
//! durations) and a quick one (same block sizes, mixes, outstanding I/Os, load
//! points and groups; seconds and MiBs).
//!
//! Every value of a built-in records where it comes from ([`Provenance`]):
//! "study 000" when the study states it, "storlab default: study silent (...)"
//! with the reason when it does not, "storlab quick profile (...)" for values
//! the quick profile scales down.

use super::jobfile::{DEFAULT_SEED, default_group, default_spec};
use super::units::{format_duration, format_size};
use super::validate::{SpecError, validate_job};
use super::{Access, BlockSizes, Content, Group, Job, Profile, Provenance, Rate, Spec, SyncMode};
use std::fmt::Write as _;
use std::time::Duration;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Quick profile: warm-up and measured time of every time-bounded point.
pub const QUICK_RAMP: Duration = Duration::from_secs(1);
/// Quick profile: measured time.
pub const QUICK_RUNTIME: Duration = Duration::from_secs(3);
/// Quick profile: time cap on points bounded by io_size, so a slow target
/// cannot turn a quick run into a long one.
pub const QUICK_IO_CAP: Duration = Duration::from_secs(10);

const SILENT: &str = "storlab default: study silent";

/// A built-in workload.
pub struct Entry {
    /// Name used on the command line.
    pub name: &'static str,
    /// Reference study it comes from ("000" .. "004").
    pub study: &'static str,
    /// One line of description.
    pub summary: &'static str,
    build: Build,
}

enum Build {
    Fn(fn(Profile) -> Job),
    /// One of the 17 named Iometer workloads of study 004, by index.
    Iometer(usize),
}

impl Entry {
    /// The job for `profile` (not yet validated; [`get`] validates).
    pub fn build(&self, profile: Profile) -> Job {
        let mut job = match self.build {
            Build::Fn(f) => f(profile),
            Build::Iometer(i) => iometer(profile, self.name, self.summary, &IOMETER[i..=i]),
        };
        job.profile = Some(profile);
        job
    }
}

/// A named sequence of workloads run one after another.
pub struct Suite {
    /// Name used on the command line.
    pub name: &'static str,
    /// One line of description.
    pub summary: &'static str,
    /// Workload names, in run order.
    pub workloads: &'static [&'static str],
}

/// The 17 named Iometer workloads of study 004: (name, block size, read %, random %).
const IOMETER: [(&str, u64, u8, u8); 17] = [
    ("ntfs-1", 4 * KIB, 100, 0),
    ("ntfs-2", 4 * KIB, 75, 0),
    ("ntfs-3", 4 * KIB, 50, 0),
    ("ntfs-4", 4 * KIB, 25, 0),
    ("ntfs-5", 4 * KIB, 0, 0),
    ("exchange-1", 8 * KIB, 100, 0),
    ("exchange-2", 8 * KIB, 75, 0),
    ("exchange-3", 8 * KIB, 50, 0),
    ("exchange-4", 8 * KIB, 25, 0),
    ("exchange-5", 8 * KIB, 0, 0),
    ("exchange-6", 8 * KIB, 50, 50),
    ("sql-1", 64 * KIB, 100, 0),
    ("sql-2", 64 * KIB, 0, 0),
    ("sql-3", 64 * KIB, 100, 100),
    ("sql-4", 64 * KIB, 0, 100),
    ("backup", 256 * KIB, 100, 0),
    ("restore", 256 * KIB, 0, 0),
];

static ENTRIES: &[Entry] = &[
    Entry {
        name: "vsphere-shared-4k",
        study: "000",
        summary: "4 KiB 75% read 100% random, 2 OIO per VM over 2 disks, 32..128 VMs",
        build: Build::Fn(|p| vsphere_shared(p, "vsphere-shared-4k", 4 * KIB)),
    },
    Entry {
        name: "vsphere-shared-8k",
        study: "000",
        summary: "8 KiB 75% read 100% random, 2 OIO per VM over 2 disks, 32..128 VMs",
        build: Build::Fn(|p| vsphere_shared(p, "vsphere-shared-8k", 8 * KIB)),
    },
    Entry {
        name: "vsphere-oltp-8k",
        study: "000",
        summary: "8 KiB 60% read 100% random, 1 VM x 4 workers x 2 disks, 128 OIO",
        build: Build::Fn(vsphere_oltp),
    },
    Entry {
        name: "vsphere-prepare",
        study: "000",
        summary: "create the vSphere data files, then 5 min of 4 KiB random reads (results discarded)",
        build: Build::Fn(vsphere_prepare),
    },
    Entry {
        name: "db-8k-read",
        study: "001",
        summary: "8 KiB 100% random reads, 1 VM over 2 disks (database pattern)",
        build: Build::Fn(db_8k_read),
    },
    Entry {
        name: "blocksize-ramp-read",
        study: "001",
        summary: "sequential reads, 8 VMs, block size doubling 512 B .. 1 MiB",
        build: Build::Fn(blocksize_ramp_read),
    },
    Entry {
        name: "seq-32k-duplex",
        study: "001",
        summary: "32 KiB sequential: 2 reader VMs alone, then with 2 writer VMs",
        build: Build::Fn(seq_32k_duplex),
    },
    Entry {
        name: "seq-32k-read",
        study: "002",
        summary: "32 KiB sequential reads, 1 VM (host CPU per protocol)",
        build: Build::Fn(seq_32k_read),
    },
    Entry {
        name: "sqlio-8k-randwrite",
        study: "002",
        summary: "8 KiB random O_SYNC writes, 2 threads x 4 OIO, one 32 GiB file, 300 s",
        build: Build::Fn(sqlio_8k_randwrite),
    },
    Entry {
        name: "sqlio-64k-write-8vm",
        study: "002",
        summary: "64 KiB sequential writes, 8 VMs, one 2 GiB file each",
        build: Build::Fn(sqlio_64k_write_8vm),
    },
    Entry {
        name: "dd-64k-write",
        study: "002",
        summary: "dd-style 64 KiB sequential write of 64 GiB, 1 stream, 15 s samples",
        build: Build::Fn(|p| dd(p, "dd-64k-write", 0)),
    },
    Entry {
        name: "dd-64k-read",
        study: "002",
        summary: "dd-style 64 KiB sequential read of 64 GiB, 1 stream, 15 s samples",
        build: Build::Fn(|p| dd(p, "dd-64k-read", 100)),
    },
    Entry {
        name: "dss-seq-read",
        study: "003",
        summary: "Oracle DSS-like 1 MiB sequential reads, 3 hosts of parallel streams",
        build: Build::Fn(dss_seq_read),
    },
    Entry {
        name: "blocksize-sweep",
        study: "003",
        summary: "sequential reads, 1 host, block size doubling 4 KiB .. 1 MiB",
        build: Build::Fn(blocksize_sweep),
    },
    Entry {
        name: "file-copy",
        study: "004",
        summary: "copy a 3.05 GB file to, then from, the datastore (1 stream)",
        build: Build::Fn(file_copy),
    },
    Entry {
        name: "atto-sweep",
        study: "004",
        summary: "ATTO-style: 15 sizes 0.5 KiB .. 8 MiB, each written then read, QD 4, direct",
        build: Build::Fn(atto_sweep),
    },
    Entry {
        name: "iometer-17",
        study: "004",
        summary: "the 17 named Iometer workloads (NTFS, Exchange, SQL, backup, restore) in turn",
        build: Build::Fn(|p| {
            iometer(
                p,
                "iometer-17",
                "the 17 named Iometer workloads of study 004",
                &IOMETER,
            )
        }),
    },
    iometer_entry(0, "NTFS 1: 4 KiB sequential, 100% read"),
    iometer_entry(1, "NTFS 2: 4 KiB sequential, 75% read"),
    iometer_entry(2, "NTFS 3: 4 KiB sequential, 50% read"),
    iometer_entry(3, "NTFS 4: 4 KiB sequential, 25% read"),
    iometer_entry(4, "NTFS 5: 4 KiB sequential, 0% read"),
    iometer_entry(5, "Exchange 1: 8 KiB sequential, 100% read"),
    iometer_entry(6, "Exchange 2: 8 KiB sequential, 75% read"),
    iometer_entry(7, "Exchange 3: 8 KiB sequential, 50% read"),
    iometer_entry(8, "Exchange 4: 8 KiB sequential, 25% read"),
    iometer_entry(9, "Exchange 5: 8 KiB sequential, 0% read"),
    iometer_entry(10, "Exchange 6: 8 KiB, 50% read, 50% random"),
    iometer_entry(11, "SQL 1: 64 KiB sequential reads"),
    iometer_entry(12, "SQL 2: 64 KiB sequential writes"),
    iometer_entry(13, "SQL 3: 64 KiB random reads"),
    iometer_entry(14, "SQL 4: 64 KiB random writes"),
    iometer_entry(15, "backup: 256 KiB sequential reads"),
    iometer_entry(16, "restore: 256 KiB sequential writes"),
];

const fn iometer_entry(i: usize, summary: &'static str) -> Entry {
    Entry {
        name: IOMETER[i].0,
        study: "004",
        summary,
        build: Build::Iometer(i),
    }
}

static SUITES: &[Suite] = &[
    Suite {
        name: "vsphere-protocols",
        summary: "study 000: shared 4k and 8k at 32..128 VMs, then single-VM OLTP",
        workloads: &["vsphere-shared-4k", "vsphere-shared-8k", "vsphere-oltp-8k"],
    },
    Suite {
        name: "nfs-vs-iscsi",
        summary: "study 004: file copy, ATTO sweep and the 17 Iometer workloads",
        workloads: &["file-copy", "atto-sweep", "iometer-17"],
    },
];

/// Every built-in workload, in catalogue order.
pub fn entries() -> &'static [Entry] {
    ENTRIES
}

/// Every suite.
pub fn suites() -> &'static [Suite] {
    SUITES
}

fn unknown(name: &str) -> SpecError {
    let names: Vec<&str> = ENTRIES.iter().map(|e| e.name).collect();
    let suites: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
    SpecError::unknown(
        "workload",
        name,
        format!("{}; suites: {}", names.join(", "), suites.join(", ")),
    )
}

/// The built-in workload `name`, validated.
pub fn get(name: &str, profile: Profile) -> Result<Job, SpecError> {
    let entry = ENTRIES
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| match find_suite(name) {
            Some(s) => SpecError::invalid(
                "workload",
                name,
                format!(
                    "a single workload; {name} is a suite of {}",
                    s.workloads.join(", ")
                ),
            ),
            None => unknown(name),
        })?;
    let job = entry.build(profile);
    validate_job(&job).map_err(|e| e.context(format!("built-in workload {name}")))?;
    Ok(job)
}

fn find_suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

/// A workload as one job, or a suite as its jobs in order.
pub fn resolve(name: &str, profile: Profile) -> Result<Vec<Job>, SpecError> {
    match find_suite(name) {
        Some(s) => s.workloads.iter().map(|w| get(w, profile)).collect(),
        None => get(name, profile).map(|j| vec![j]),
    }
}

/// The `storlab workloads` listing: one line per workload, then the suites.
pub fn list_text() -> String {
    let mut out = String::from("Workloads (storlab workloads show NAME for details):\n");
    for e in ENTRIES {
        let _ = writeln!(out, "  {:<22} study {}  {}", e.name, e.study, e.summary);
    }
    out.push_str("\nSuites:\n");
    for s in SUITES {
        let _ = writeln!(
            out,
            "  {:<22} {}: {}",
            s.name,
            s.summary,
            s.workloads.join(", ")
        );
    }
    out
}

fn bs_text(bs: &BlockSizes) -> String {
    match bs.0.as_slice() {
        [(size, _)] => format_size(*size),
        mix => mix
            .iter()
            .map(|(s, w)| format!("{}/{w}", format_size(*s)))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// The `storlab workloads show NAME` text: every load point in full, each
/// value with where it comes from. A suite shows each of its workloads.
pub fn show_text(name: &str, profile: Profile) -> Result<String, SpecError> {
    if let Some(s) = find_suite(name) {
        let mut out = format!("suite {}: {}\n", s.name, s.summary);
        for w in s.workloads {
            out.push('\n');
            out.push_str(&show_text(w, profile)?);
        }
        return Ok(out);
    }
    let job = get(name, profile)?;
    let entry = ENTRIES
        .iter()
        .find(|e| e.name == name)
        .expect("get found it");
    let profile_name = match profile {
        Profile::Full => "full",
        Profile::Quick => "quick",
    };
    let mut out = format!(
        "{} (study {}, {profile_name} profile): {}\n",
        job.name, entry.study, job.description
    );
    let src = |field: &str| {
        job.provenance
            .iter()
            .find(|p| p.field == field)
            .map_or("storlab default", |p| p.source.as_str())
    };
    let line = |out: &mut String, indent: &str, field: &str, value: String| {
        let _ = writeln!(out, "{indent}{field:<18} {value:<16} {}", src(field));
    };
    for (i, p) in job.points.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nload point {}/{}: {}",
            i + 1,
            job.points.len(),
            p.label
        );
        for g in &p.groups {
            let _ = writeln!(out, "  group {}", g.name);
            let a = &g.access;
            line(&mut out, "    ", "vms", g.vms.to_string());
            line(&mut out, "    ", "numjobs", g.workers_per_vm.to_string());
            line(&mut out, "    ", "disks", g.disks_per_vm.to_string());
            line(&mut out, "    ", "bs", bs_text(&a.bs));
            line(&mut out, "    ", "rwmixread", format!("{}%", a.read_pct));
            line(
                &mut out,
                "    ",
                "percentage_random",
                format!("{}%", a.random_pct),
            );
            line(&mut out, "    ", "iodepth", a.iodepth.to_string());
            let rate = match a.rate {
                None => "none".to_string(),
                Some(Rate::Iops(n)) => format!("{n} IOPS"),
                Some(Rate::Bytes(b)) => format!("{}/s", format_size(b)),
            };
            line(&mut out, "    ", "rate", rate);
            line(&mut out, "    ", "blockalign", format_size(a.alignment()));
        }
        line(&mut out, "  ", "size", format_size(p.size));
        line(&mut out, "  ", "offset", format_size(p.offset));
        line(&mut out, "  ", "ramp_time", format_duration(p.ramp));
        let runtime = if p.runtime.is_zero() {
            "until io_size".to_string()
        } else {
            format_duration(p.runtime)
        };
        line(&mut out, "  ", "runtime", runtime);
        line(
            &mut out,
            "  ",
            "io_size",
            p.io_limit.map_or("none".to_string(), format_size),
        );
        line(&mut out, "  ", "interval", format_duration(p.interval));
        line(&mut out, "  ", "direct", p.direct.to_string());
        let sync = match p.sync {
            SyncMode::None => "none",
            SyncMode::Dsync => "dsync",
            SyncMode::Sync => "sync",
        };
        line(&mut out, "  ", "sync", sync.to_string());
        let content = match p.content {
            Content::Random => "random".to_string(),
            Content::Zeros => "zeros".to_string(),
            Content::Mixed {
                compress_pct,
                dedupe_pct,
            } => format!("compress={compress_pct},dedupe={dedupe_pct}"),
        };
        line(&mut out, "  ", "content", content);
        line(&mut out, "  ", "seed", format!("{:#x}", p.seed));
    }
    Ok(out)
}

/// fio-style short size for labels: 512, 4k, 1m.
fn size_label(bytes: u64) -> String {
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{}m", bytes / MIB)
    } else if bytes >= KIB && bytes % KIB == 0 {
        format!("{}k", bytes / KIB)
    } else {
        bytes.to_string()
    }
}

/// Collects a built-in's points and the provenance of its values.
struct Builder {
    profile: Profile,
    study: &'static str,
    prov: Vec<Provenance>,
    /// The point template: everything but label and groups.
    base: Spec,
}

impl Builder {
    fn new(profile: Profile, study: &'static str) -> Self {
        Builder {
            profile,
            study,
            prov: Vec::new(),
            base: default_spec(""),
        }
    }

    fn quick(&self) -> bool {
        self.profile == Profile::Quick
    }

    /// Record that `field` is stated by the study (`note` adds detail).
    fn stated(&mut self, field: &str, note: &str) {
        let source = if note.is_empty() {
            format!("study {}", self.study)
        } else {
            format!("study {}: {note}", self.study)
        };
        self.record(field, source);
    }

    /// Record that the study is silent on `field`, and why storlab picked its value.
    fn silent(&mut self, field: &str, why: &str) {
        self.record(field, format!("{SILENT} ({why})"));
    }

    fn record(&mut self, field: &str, source: String) {
        if !self.prov.iter().any(|p| p.field == field) {
            self.prov.push(Provenance {
                field: field.to_string(),
                source,
            });
        }
    }

    /// Region size per disk: the full value's source is `src` (stated when it
    /// starts with "study", else silent); quick uses `quick`.
    fn size(&mut self, full: u64, quick: u64, stated: Option<&str>) {
        let full_src = match stated {
            Some(note) => format!("study {}: {note}", self.study),
            None => format!("{SILENT} (large enough to defeat target caches)"),
        };
        if self.quick() {
            self.base.size = quick;
            self.record(
                "size",
                format!(
                    "storlab quick profile (full: {}; {full_src})",
                    format_size(full)
                ),
            );
        } else {
            self.base.size = full;
            self.record("size", full_src);
        }
    }

    /// Warm-up and measured time; `None` sources mean the study is silent.
    fn timing(
        &mut self,
        ramp: Duration,
        runtime: Duration,
        stated: Option<&str>,
        silent_why: &str,
    ) {
        let src = match stated {
            Some(note) => format!(
                "study {}{}{note}",
                self.study,
                if note.is_empty() { "" } else { ": " }
            ),
            None => format!("{SILENT} ({silent_why})"),
        };
        if self.quick() {
            self.base.ramp = if ramp.is_zero() {
                Duration::ZERO
            } else {
                QUICK_RAMP
            };
            self.base.runtime = QUICK_RUNTIME;
            let full = format!(
                "full: {} ramp, {} measured; {src}",
                format_duration(ramp),
                format_duration(runtime)
            );
            self.record("ramp_time", format!("storlab quick profile ({full})"));
            self.record("runtime", format!("storlab quick profile ({full})"));
        } else {
            self.base.ramp = ramp;
            self.base.runtime = runtime;
            self.record("ramp_time", src.clone());
            self.record("runtime", src);
        }
    }

    /// A byte count per worker instead of a time; region size = the same bytes
    /// (rounded up to whole `bs` blocks), so each point covers its file once.
    fn io_size(&mut self, full: u64, quick: u64, bs: u64, note: &str) {
        let src = format!("study {}: {note}", self.study);
        let (bytes, ramp, runtime) = if self.quick() {
            self.record(
                "io_size",
                format!("storlab quick profile (full: {}; {src})", format_size(full)),
            );
            self.record(
                "runtime",
                format!(
                    "storlab quick profile: until io_size, at most {}",
                    format_duration(QUICK_IO_CAP)
                ),
            );
            (quick, Duration::ZERO, QUICK_IO_CAP)
        } else {
            self.record("io_size", src.clone());
            self.record(
                "runtime",
                format!("study {}: until io_size is transferred", self.study),
            );
            (full.div_ceil(bs) * bs, Duration::ZERO, Duration::ZERO)
        };
        self.base.io_limit = Some(bytes);
        self.base.size = bytes;
        self.base.ramp = ramp;
        self.base.runtime = runtime;
        self.record(
            "size",
            format!(
                "storlab default: one file of io_size ({})",
                format_size(bytes)
            ),
        );
        self.record(
            "ramp_time",
            format!(
                "study {}: a transfer measured from its first byte",
                self.study
            ),
        );
    }

    fn point(&self, label: impl Into<String>, groups: Vec<Group>) -> Spec {
        Spec {
            label: label.into(),
            groups,
            ..self.base.clone()
        }
    }

    /// Finish: default reasons for everything the builder did not record.
    fn finish(mut self, name: &str, description: &str, points: Vec<Spec>) -> Job {
        let defaults: [(&str, String); 12] = [
            (
                "direct",
                format!("{SILENT} (Iometer and SQLIO open their test files unbuffered)"),
            ),
            (
                "sync",
                format!("{SILENT} (plain writes, durability left to the target)"),
            ),
            (
                "content",
                format!(
                    "{SILENT} (incompressible data, so target compression or dedupe cannot flatter it)"
                ),
            ),
            ("offset", format!("{SILENT} (start of each disk)")),
            ("interval", format!("{SILENT} (1 s samples)")),
            (
                "seed",
                format!("storlab default ({DEFAULT_SEED:#x}, so runs repeat)"),
            ),
            (
                "io_size",
                "storlab default: time-bounded, no byte limit".to_string(),
            ),
            (
                "rate",
                "storlab default: unthrottled, as in the study".to_string(),
            ),
            (
                "blockalign",
                "storlab default: the smallest block size (Iometer's sector-aligned default)"
                    .to_string(),
            ),
            (
                "numjobs",
                format!("{SILENT} (one worker per VM, as Iometer's default)"),
            ),
            ("disks", format!("{SILENT} (one disk per VM)")),
            ("vms", format!("{SILENT} (one VM)")),
        ];
        for (field, src) in defaults {
            self.record(field, src);
        }
        Job {
            name: name.to_string(),
            description: description.to_string(),
            profile: Some(self.profile),
            points,
            provenance: self.prov,
            curve: None,
        }
    }
}

/// A group of `vms` VMs, each `workers` workers over `disks` disks.
#[allow(clippy::too_many_arguments)]
fn group(
    name: &str,
    vms: u32,
    workers: u32,
    disks: u32,
    bs: u64,
    read: u8,
    random: u8,
    iodepth: u32,
) -> Group {
    Group {
        vms,
        workers_per_vm: workers,
        disks_per_vm: disks,
        access: Access {
            bs: BlockSizes::one(bs),
            read_pct: read,
            random_pct: random,
            iodepth,
            ..default_group(name).access
        },
        ..default_group(name)
    }
}

/// Iometer-based studies ran unbuffered; record it as the tool's behaviour.
fn iometer_direct(b: &mut Builder) {
    b.base.direct = true;
    b.silent("direct", "Iometer opens its test files unbuffered");
}

fn vsphere_shared(profile: Profile, name: &str, bs: u64) -> Job {
    let mut b = Builder::new(profile, "000");
    b.stated("vms", "load points of 32, 64, 96 and 128 VMs");
    b.stated("numjobs", "one Iometer worker per VM");
    b.stated("disks", "2 disks per VM, one per storage controller");
    b.stated("bs", "");
    b.stated("rwmixread", "75% read");
    b.stated("percentage_random", "100% random");
    b.stated(
        "iodepth",
        "2 outstanding I/Os per VM (64, 128, 192, 256 in all)",
    );
    b.size(10 * GIB, 2 * MIB, Some("2 x 10 GB files per VM"));
    b.timing(
        Duration::from_secs(600),
        Duration::from_secs(300),
        Some("10 min ramp, 5 min measured"),
        "",
    );
    iometer_direct(&mut b);
    let points = [32, 64, 96, 128]
        .into_iter()
        .map(|vms| {
            b.point(
                format!("{vms} VMs"),
                vec![group("vm", vms, 1, 2, bs, 75, 100, 2)],
            )
        })
        .collect();
    let desc = format!(
        "{} 75% read 100% random, N VMs x 1 worker x 2 disks, 2 OIO per VM, N = 32..128",
        format_size(bs)
    );
    b.finish(name, &desc, points)
}

fn vsphere_oltp(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "000");
    b.stated("vms", "a single VM");
    b.stated("numjobs", "4 Iometer workers");
    b.stated("disks", "each worker over 2 disks");
    b.stated("bs", "");
    b.stated("rwmixread", "60% read");
    b.stated("percentage_random", "100% random");
    b.stated(
        "iodepth",
        "16 per worker per disk: 32 per worker, 128 in all",
    );
    b.size(
        200 * GIB,
        4 * MIB,
        Some("2 x 200 GB, larger than any cache"),
    );
    b.timing(
        Duration::from_secs(600),
        Duration::from_secs(300),
        Some("10 min ramp, 5 min measured"),
        "",
    );
    iometer_direct(&mut b);
    let points = vec![b.point("1 VM", vec![group("vm", 1, 4, 2, 8 * KIB, 60, 100, 32)])];
    b.finish(
        "vsphere-oltp-8k",
        "8 KiB 60% read 100% random OLTP, 1 VM x 4 workers x 2 disks, 128 OIO",
        points,
    )
}

fn vsphere_prepare(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "000");
    b.stated("vms", "all VMs (the largest load point, 128)");
    b.stated("numjobs", "as the tests: one worker per VM");
    b.stated("disks", "as the tests: 2 disks per VM");
    b.stated("bs", "");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "100% random");
    b.stated("iodepth", "as the tests: 2 per VM");
    b.size(
        10 * GIB,
        2 * MIB,
        Some("creates the 2 x 10 GB data files per VM (Iometer's iobw.tst)"),
    );
    b.timing(
        Duration::ZERO,
        Duration::from_secs(300),
        Some("5 min, results discarded"),
        "",
    );
    iometer_direct(&mut b);
    let points = vec![b.point(
        "prepare",
        vec![group("vm", 128, 1, 2, 4 * KIB, 100, 100, 2)],
    )];
    b.finish(
        "vsphere-prepare",
        "create the vSphere test files, then 5 min of 4 KiB random reads (discarded)",
        points,
    )
}

fn db_8k_read(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "001");
    b.stated("vms", "one VM");
    b.silent("numjobs", "one worker per VM");
    b.stated("disks", "2 disks");
    b.stated("bs", "");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "100% random (database pattern)");
    b.silent(
        "iodepth",
        "60,000 IOPS at sub-millisecond latency needs about 32 I/Os in flight",
    );
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(60),
        Duration::from_secs(300),
        None,
        "1 min ramp, 5 min measured as in study 000",
    );
    iometer_direct(&mut b);
    let points = vec![b.point(
        "db-8k-read",
        vec![group("vm", 1, 1, 2, 8 * KIB, 100, 100, 32)],
    )];
    b.finish(
        "db-8k-read",
        "8 KiB random reads from one VM over 2 disks (60,000 IOPS on 8 Gb FC)",
        points,
    )
}

/// Doubling block sizes from `lo` to `hi` inclusive.
fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    std::iter::successors(Some(lo), |s| Some(s * 2))
        .take_while(|s| *s <= hi)
        .collect()
}

fn blocksize_ramp_read(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "001");
    b.stated("vms", "8 VMs");
    b.stated("numjobs", "1 worker each");
    b.silent("disks", "one disk per VM");
    b.stated("bs", "growing 512 B .. 1 MiB, one step per fixed interval");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "sequential");
    b.silent(
        "iodepth",
        "4 per VM keeps a sequential stream busy without hiding the link limit",
    );
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(10),
        Duration::from_secs(60),
        None,
        "a 1 min step after 10 s to settle",
    );
    iometer_direct(&mut b);
    let points = doubling(512, MIB)
        .into_iter()
        .map(|bs| {
            b.point(
                format!("bs={}", size_label(bs)),
                vec![group("vm", 8, 1, 1, bs, 100, 0, 4)],
            )
        })
        .collect();
    b.finish(
        "blocksize-ramp-read",
        "8 VMs of sequential reads, block size doubling 512 B .. 1 MiB",
        points,
    )
}

fn seq_32k_duplex(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "001");
    b.stated("vms", "2 reader VMs, then 2 writer VMs added");
    b.silent("numjobs", "one worker per VM");
    b.stated("disks", "one disk each");
    b.stated("bs", "");
    b.stated("rwmixread", "readers 100%, writers 0%");
    b.stated("percentage_random", "sequential");
    b.silent("iodepth", "4 per VM keeps a sequential stream busy");
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(60),
        Duration::from_secs(300),
        None,
        "1 min ramp, 5 min measured as in study 000",
    );
    iometer_direct(&mut b);
    let readers = group("readers", 2, 1, 1, 32 * KIB, 100, 0, 4);
    let writers = group("writers", 2, 1, 1, 32 * KIB, 0, 0, 4);
    let points = vec![
        b.point("reads", vec![readers.clone()]),
        b.point("reads+writes", vec![readers, writers]),
    ];
    b.finish(
        "seq-32k-duplex",
        "32 KiB sequential: 2 reader VMs, then 2 writer VMs added (full duplex)",
        points,
    )
}

fn seq_32k_read(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "002");
    b.stated("vms", "one VM");
    b.silent("disks", "one disk");
    b.stated("bs", "");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "sequential");
    b.silent("iodepth", "4 keeps a sequential stream busy");
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(60),
        Duration::from_secs(300),
        None,
        "1 min ramp, 5 min measured as in study 000",
    );
    iometer_direct(&mut b);
    let points = vec![b.point(
        "seq-32k-read",
        vec![group("vm", 1, 1, 1, 32 * KIB, 100, 0, 4)],
    )];
    b.finish(
        "seq-32k-read",
        "32 KiB sequential reads from one VM; compare host CPU per protocol",
        points,
    )
}

fn sqlio_8k_randwrite(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "002");
    b.stated("vms", "one host running SQLIO");
    b.stated("numjobs", "2 threads");
    b.stated("disks", "one 32 GB file");
    b.stated("bs", "");
    b.stated("rwmixread", "100% writes");
    b.stated("percentage_random", "100% random");
    b.stated("iodepth", "4 outstanding per thread");
    b.size(32 * GIB, 4 * MIB, Some("one 32 GB file"));
    b.timing(
        Duration::ZERO,
        Duration::from_secs(300),
        Some("300 s; SQLIO measures from the first I/O, so no ramp"),
        "",
    );
    b.base.sync = SyncMode::Sync;
    b.stated(
        "sync",
        "synchronous writes (O_SYNC, as VMware's NFS client issues them)",
    );
    b.base.direct = true;
    b.silent("direct", "SQLIO opens its file unbuffered");
    let points = vec![b.point(
        "sqlio-8k-randwrite",
        vec![group("vm", 1, 2, 1, 8 * KIB, 0, 100, 4)],
    )];
    b.finish(
        "sqlio-8k-randwrite",
        "SQLIO 8 KiB random O_SYNC writes, 2 threads x 4 OIO, one 32 GiB file, 300 s",
        points,
    )
}

fn sqlio_64k_write_8vm(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "002");
    b.stated("vms", "8 VMs");
    b.silent("numjobs", "one SQLIO thread per VM");
    b.stated("disks", "one 2 GB file each");
    b.stated("bs", "");
    b.stated("rwmixread", "100% writes");
    b.stated("percentage_random", "sequential");
    b.silent("iodepth", "4, as in the study's other SQLIO run");
    b.size(2 * GIB, 4 * MIB, Some("one 2 GB file per VM"));
    b.timing(
        Duration::ZERO,
        Duration::from_secs(300),
        None,
        "300 s without ramp, as the study's other SQLIO run",
    );
    b.base.direct = true;
    b.silent("direct", "SQLIO opens its files unbuffered");
    let points = vec![b.point(
        "sqlio-64k-write-8vm",
        vec![group("vm", 8, 1, 1, 64 * KIB, 0, 0, 4)],
    )];
    b.finish(
        "sqlio-64k-write-8vm",
        "SQLIO 64 KiB sequential writes from 8 VMs, one 2 GiB file each",
        points,
    )
}

fn dd(profile: Profile, name: &str, read: u8) -> Job {
    let mut b = Builder::new(profile, "002");
    b.stated("vms", "one dd stream");
    b.stated("numjobs", "one dd stream");
    b.stated("disks", "one file");
    b.stated("bs", "bs=64k");
    b.stated(
        "rwmixread",
        if read == 100 {
            "dd if=file of=/dev/null"
        } else {
            "dd if=/dev/zero of=file"
        },
    );
    b.stated("percentage_random", "sequential");
    b.stated("iodepth", "dd issues one I/O at a time");
    b.io_size(64 * GIB, 16 * MIB, 64 * KIB, "count=1024k bs=64k, 64 GiB");
    if b.quick() {
        b.record(
            "interval",
            "storlab quick profile (full: 15 s, iostat -x 15)".to_string(),
        );
    } else {
        b.base.interval = Duration::from_secs(15);
        b.stated("interval", "iostat -x 15");
    }
    b.base.content = Content::Zeros;
    b.stated("content", "dd if=/dev/zero");
    b.silent("direct", "dd's default: through the page cache");
    let dir = if read == 100 { "read" } else { "write" };
    let points = vec![b.point(name, vec![group("vm", 1, 1, 1, 64 * KIB, read, 0, 1)])];
    b.finish(
        name,
        &format!("dd-style 64 KiB sequential {dir} of 64 GiB, one stream, 15 s samples"),
        points,
    )
}

fn dss_seq_read(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "003");
    b.stated("vms", "3 hosts");
    b.silent("numjobs", "one worker per host");
    b.silent("disks", "4 parallel streams per host, each on its own disk");
    b.silent("bs", "1 MiB multiblock reads are typical of DSS");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "sequential");
    b.silent(
        "iodepth",
        "high: 4 per stream, 16 per host, as much as the link takes",
    );
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(60),
        Duration::from_secs(300),
        None,
        "1 min ramp, 5 min measured as in study 000",
    );
    b.base.direct = true;
    b.silent("direct", "a database reads with direct I/O");
    let points = vec![b.point(
        "dss-seq-read",
        vec![group("host", 3, 1, 4, MIB, 100, 0, 16)],
    )];
    b.finish(
        "dss-seq-read",
        "Oracle DSS-like 1 MiB sequential reads, 3 hosts x 4 streams",
        points,
    )
}

fn blocksize_sweep(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "003");
    b.stated("vms", "one host");
    b.silent("disks", "one disk");
    b.stated("bs", "4 KiB .. 1 MiB");
    b.stated("rwmixread", "100% read");
    b.stated("percentage_random", "sequential");
    b.silent("iodepth", "4 keeps a sequential stream busy");
    b.size(10 * GIB, 4 * MIB, None);
    b.timing(
        Duration::from_secs(10),
        Duration::from_secs(60),
        None,
        "a 1 min step after 10 s to settle",
    );
    iometer_direct(&mut b);
    let points = doubling(4 * KIB, MIB)
        .into_iter()
        .map(|bs| {
            b.point(
                format!("bs={}", size_label(bs)),
                vec![group("host", 1, 1, 1, bs, 100, 0, 4)],
            )
        })
        .collect();
    b.finish(
        "blocksize-sweep",
        "sequential reads from one host, block size doubling 4 KiB .. 1 MiB",
        points,
    )
}

fn file_copy(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "004");
    b.stated("vms", "one copy");
    b.stated("numjobs", "one stream");
    b.stated("disks", "one file");
    b.silent("bs", "1 MiB, the chunk size of a large-file copy");
    b.stated("rwmixread", "written to the datastore, then read back");
    b.stated("percentage_random", "whole-file copy");
    b.silent("iodepth", "a copy is one stream, one I/O at a time");
    // 3.05 GB in the binary units storlab uses throughout, in whole 1 MiB blocks.
    let bytes = (305 * GIB / 100).div_ceil(MIB) * MIB;
    b.io_size(
        bytes,
        16 * MIB,
        MIB,
        "a 3.05 GB file, in whole 1 MiB blocks",
    );
    b.base.direct = true;
    b.silent(
        "direct",
        "so the read half measures the datastore, not the cache the write just filled",
    );
    let points = vec![
        b.point("write", vec![group("copy", 1, 1, 1, MIB, 0, 0, 1)]),
        b.point("read", vec![group("copy", 1, 1, 1, MIB, 100, 0, 1)]),
    ];
    b.finish(
        "file-copy",
        "copy a 3.05 GB file to the datastore, then back",
        points,
    )
}

fn atto_sweep(profile: Profile) -> Job {
    let mut b = Builder::new(profile, "004");
    b.stated("vms", "one ATTO instance");
    b.silent("numjobs", "ATTO runs one thread");
    b.stated("disks", "one test file");
    b.stated("bs", "0.5 KiB .. 8 MiB, doubling");
    b.stated("rwmixread", "each size written, then read");
    b.stated("percentage_random", "sequential");
    b.stated("iodepth", "queue depth 4 (the tool's default)");
    b.io_size(
        256 * MIB,
        16 * MIB,
        8 * MIB,
        "256 MB per size (the tool's default)",
    );
    b.base.direct = true;
    b.stated("direct", "direct I/O (the tool's default)");
    let mut points = Vec::new();
    for bs in doubling(512, 8 * MIB) {
        for (dir, read) in [("write", 0), ("read", 100)] {
            points.push(b.point(
                format!("bs={} {dir}", size_label(bs)),
                vec![group("atto", 1, 1, 1, bs, read, 0, 4)],
            ));
        }
    }
    b.finish(
        "atto-sweep",
        "ATTO-style sweep: 15 sizes 0.5 KiB .. 8 MiB, each written then read, QD 4",
        points,
    )
}

fn iometer(profile: Profile, name: &str, description: &str, set: &[(&str, u64, u8, u8)]) -> Job {
    let mut b = Builder::new(profile, "004");
    b.silent("vms", "one VM");
    b.silent("disks", "one 50 GB file");
    b.stated("bs", "the named workload's block size");
    b.stated("rwmixread", "the named workload's read share");
    b.stated("percentage_random", "the named workload's random share");
    b.silent("iodepth", "Iometer's own default of 1 outstanding I/O");
    b.size(50 * GIB, 4 * MIB, Some("a 50 GB test file"));
    b.timing(
        Duration::from_secs(120),
        Duration::from_secs(300),
        Some("2 min ramp, 5 min each"),
        "",
    );
    iometer_direct(&mut b);
    let points = set
        .iter()
        .map(|&(label, bs, read, random)| {
            b.point(label, vec![group("vm", 1, 1, 1, bs, read, random, 1)])
        })
        .collect();
    b.finish(name, description, points)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name in WORKLOADS.md.
    const NAMES: &[&str] = &[
        "vsphere-shared-4k",
        "vsphere-shared-8k",
        "vsphere-oltp-8k",
        "vsphere-prepare",
        "db-8k-read",
        "blocksize-ramp-read",
        "seq-32k-duplex",
        "seq-32k-read",
        "sqlio-8k-randwrite",
        "sqlio-64k-write-8vm",
        "dd-64k-write",
        "dd-64k-read",
        "dss-seq-read",
        "blocksize-sweep",
        "file-copy",
        "atto-sweep",
        "iometer-17",
        "ntfs-1",
        "ntfs-2",
        "ntfs-3",
        "ntfs-4",
        "ntfs-5",
        "exchange-1",
        "exchange-2",
        "exchange-3",
        "exchange-4",
        "exchange-5",
        "exchange-6",
        "sql-1",
        "sql-2",
        "sql-3",
        "sql-4",
        "backup",
        "restore",
    ];

    #[test]
    fn every_name_resolves_and_validates() {
        for profile in [Profile::Full, Profile::Quick] {
            for name in NAMES {
                let job = get(name, profile).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(job.name, *name);
                assert_eq!(job.profile, Some(profile));
                assert_eq!(resolve(name, profile).unwrap(), vec![job]);
                show_text(name, profile).unwrap();
            }
            for s in ["vsphere-protocols", "nfs-vs-iscsi"] {
                let jobs = resolve(s, profile).unwrap();
                let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
                assert_eq!(names, find_suite(s).unwrap().workloads);
            }
        }
        assert_eq!(ENTRIES.len(), NAMES.len());
    }

    type Shape = Vec<(
        String,
        Vec<(String, u32, u32, u32, BlockSizes, u8, u8, u32)>,
    )>;

    fn shape(job: &Job) -> Shape {
        job.points
            .iter()
            .map(|p| {
                let groups = p
                    .groups
                    .iter()
                    .map(|g| {
                        let a = &g.access;
                        let s = (
                            g.vms,
                            g.workers_per_vm,
                            g.disks_per_vm,
                            a.bs.clone(),
                            a.read_pct,
                            a.random_pct,
                        );
                        (g.name.clone(), s.0, s.1, s.2, s.3, s.4, s.5, a.iodepth)
                    })
                    .collect();
                (p.label.clone(), groups)
            })
            .collect()
    }

    #[test]
    fn quick_keeps_the_shape() {
        for e in entries() {
            let full = get(e.name, Profile::Full).unwrap();
            let quick = get(e.name, Profile::Quick).unwrap();
            assert_eq!(shape(&full), shape(&quick), "{}", e.name);
            for p in &quick.points {
                assert!(
                    p.ramp <= QUICK_RAMP && p.runtime <= QUICK_IO_CAP,
                    "{}",
                    e.name
                );
                assert!(p.size <= 16 * MIB, "{}", e.name);
                assert!(p.io_limit.is_none_or(|b| b <= 16 * MIB), "{}", e.name);
            }
        }
    }

    #[test]
    fn quick_vsphere_fits_a_laptop() {
        let job = get("vsphere-shared-4k", Profile::Quick).unwrap();
        let last = job.points.last().unwrap();
        let files: u64 = last
            .groups
            .iter()
            .map(|g| g.vms as u64 * g.disks_per_vm as u64)
            .sum();
        assert!(files * last.size <= GIB);
        let total: Duration = job.points.iter().map(|p| p.ramp + p.runtime).sum();
        assert!(total <= Duration::from_secs(20));
    }

    #[test]
    fn study_values() {
        let j = get("vsphere-shared-4k", Profile::Full).unwrap();
        let vms: Vec<u32> = j.points.iter().map(|p| p.groups[0].vms).collect();
        assert_eq!(vms, [32, 64, 96, 128]);
        let p = &j.points[0];
        let g = &p.groups[0];
        assert_eq!(
            (g.workers_per_vm, g.disks_per_vm, g.access.iodepth),
            (1, 2, 2)
        );
        assert_eq!(
            (g.access.bs.max(), g.access.read_pct, g.access.random_pct),
            (4096, 75, 100)
        );
        assert_eq!(
            (p.size, p.ramp, p.runtime),
            (10 * GIB, Duration::from_secs(600), Duration::from_secs(300))
        );
        assert_eq!(
            j.points
                .iter()
                .map(|p| p.total_iodepth())
                .collect::<Vec<_>>(),
            [64, 128, 192, 256]
        );

        let o = get("vsphere-oltp-8k", Profile::Full).unwrap();
        assert_eq!(o.points[0].total_iodepth(), 128);
        assert_eq!(o.points[0].size, 200 * GIB);

        let d = get("seq-32k-duplex", Profile::Full).unwrap();
        assert_eq!(d.points.len(), 2);
        assert_eq!(d.points[0].groups.len(), 1);
        assert_eq!(d.points[1].groups.len(), 2);
        assert_eq!(d.points[1].groups[1].access.read_pct, 0);

        let r = get("blocksize-ramp-read", Profile::Full).unwrap();
        let sizes: Vec<u64> = r
            .points
            .iter()
            .map(|p| p.groups[0].access.bs.max())
            .collect();
        assert_eq!(sizes, doubling(512, MIB));
        assert_eq!((sizes.len(), r.points[0].groups[0].vms), (12, 8));

        let a = get("atto-sweep", Profile::Full).unwrap();
        assert_eq!(a.points.len(), 30);
        assert_eq!(a.points[0].label, "bs=512 write");
        assert_eq!(a.points[29].label, "bs=8m read");
        assert!(
            a.points.iter().all(|p| p.direct
                && p.io_limit == Some(256 * MIB)
                && p.groups[0].access.iodepth == 4)
        );

        let s = get("sqlio-8k-randwrite", Profile::Full).unwrap();
        let p = &s.points[0];
        assert_eq!(
            (p.sync, p.size, p.runtime),
            (SyncMode::Sync, 32 * GIB, Duration::from_secs(300))
        );
        assert_eq!(
            (p.groups[0].workers_per_vm, p.groups[0].access.iodepth),
            (2, 4)
        );

        let dd = get("dd-64k-write", Profile::Full).unwrap();
        assert_eq!(dd.points[0].io_limit, Some(64 * GIB));
        let fc = get("file-copy", Profile::Full).unwrap();
        assert_eq!(fc.points[0].io_limit, Some(3124 * MIB));

        let i = get("iometer-17", Profile::Full).unwrap();
        assert_eq!(i.points.len(), 17);
        assert_eq!(i.points[10].label, "exchange-6");
        assert_eq!(
            (
                i.points[10].groups[0].access.read_pct,
                i.points[10].groups[0].access.random_pct
            ),
            (50, 50)
        );
    }

    #[test]
    fn silent_values_say_so() {
        let j = get("db-8k-read", Profile::Full).unwrap();
        let iodepth = j.provenance.iter().find(|p| p.field == "iodepth").unwrap();
        assert!(
            iodepth.source.starts_with("storlab default: study silent"),
            "{}",
            iodepth.source
        );
        let show = show_text("db-8k-read", Profile::Full).unwrap();
        assert!(
            show.contains("iodepth") && show.contains("study silent"),
            "{show}"
        );
        let show = show_text("vsphere-shared-4k", Profile::Full).unwrap();
        assert!(show.contains("study 000"), "{show}");
    }

    #[test]
    fn unknown_names_list_the_catalogue() {
        let e = get("vsphere-4k", Profile::Full).unwrap_err().to_string();
        assert!(
            e.starts_with("unknown workload \"vsphere-4k\" (allowed: vsphere-shared-4k, "),
            "{e}"
        );
        assert!(e.contains("suites: vsphere-protocols, nfs-vs-iscsi"), "{e}");
        assert!(resolve("nope", Profile::Quick).is_err());
        assert!(show_text("nope", Profile::Quick).is_err());
        let e = get("nfs-vs-iscsi", Profile::Full).unwrap_err().to_string();
        assert!(e.contains("is a suite"), "{e}");
    }

    #[test]
    fn listing() {
        let text = list_text();
        for name in NAMES {
            assert!(text.contains(name), "{name}");
        }
        assert!(text.contains("vsphere-protocols") && text.contains("nfs-vs-iscsi"));
    }
}
