//! Trace replay (`storlab run --replay FILE`): the trace formats storlab reads
//! and the streaming [`Reader`] the engine draws each I/O from.
//!
//! A trace is never loaded whole: the reader holds one line (at most
//! [`MAX_LINE`] bytes) and a 64 KiB read buffer, so memory does not grow with
//! the trace's length. [`scan`] reads it once before the run, the same way,
//! to check every line and learn its shape ([`Shape`]: its devices, its
//! largest I/O and offset, its reads and writes).
//!
//! Formats ([`Format`], told apart by the first line): fio's iolog version 2
//! and version 3 ([`fio`]) and blkparse's text output ([`blkparse`]).
//! blktrace's binary files are not read: blkparse turns them into text.
//!
//! Each I/O is due at its trace time divided by the replay speed, counted from
//! the run's start; the engine issues it then whatever the target is doing
//! (open loop) and counts its latency from that due time. Trims and syncs are
//! counted and passed over: the engine issues reads and writes only.

pub mod blkparse;
pub mod fio;

use super::{Dir, Spec};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest trace line read, bytes.
pub const MAX_LINE: usize = 4096;
/// The read buffer under the reader, bytes.
const READ_BUFFER: usize = 64 << 10;
/// I/Os in flight at most when `--iodepth` is not given.
pub const DEFAULT_DEPTH: u32 = 32;

/// The formats storlab reads, for errors.
pub const ALLOWED_FORMATS: &str = "fio iolog version 2 (first line \"fio version 2 iolog\"), \
     fio iolog version 3 (first line \"fio version 3 iolog\"), blkparse's text output \
     (lines such as \"8,0 1 1 0.000000000 4162 Q WS 3417048 + 8 [kjournald]\")";

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// fio's iolog version 2: no timestamps, `wait` lines.
    FioV2,
    /// fio's iolog version 3: a timestamp in µs on every line.
    FioV3,
    /// blkparse's default text output (its Q events).
    Blkparse,
}

impl Format {
    /// The format in a few words.
    pub fn name(self) -> &'static str {
        match self {
            Format::FioV2 => "fio iolog v2",
            Format::FioV3 => "fio iolog v3",
            Format::Blkparse => "blkparse",
        }
    }
}

/// What a trace holds, learnt by [`scan`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Reads and writes replayed.
    pub ios: u64,
    /// Of which reads.
    pub reads: u64,
    /// Bytes they move.
    pub bytes: u64,
    /// Trims passed over.
    pub trims: u64,
    /// Syncs and flushes passed over.
    pub syncs: u64,
    /// The largest I/O, bytes.
    pub max_len: u32,
    /// The end of the furthest I/O on any device, bytes.
    pub extent: u64,
    /// The last I/O's trace time, ns.
    pub span_ns: u64,
    /// The trace's devices or files, in order of first appearance: device `k`
    /// is the point's VM disk `k` (so target `k % targets`).
    pub devices: Vec<String>,
}

/// A replayed trace, as a load point carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The trace file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Time runs this many times as fast as in the trace (2: twice as fast).
    pub speed: f64,
    /// What it holds.
    pub shape: Shape,
}

impl Replay {
    /// When an I/O at trace time `at_ns` is due, ns after the run's start.
    pub fn due_ns(&self, at_ns: u64) -> u64 {
        if self.speed == 1.0 {
            at_ns
        } else {
            (at_ns as f64 / self.speed) as u64
        }
    }
}

/// One read or write of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceIo {
    /// Trace time, ns since the trace began.
    pub at_ns: u64,
    /// Index of its device in order of first appearance.
    pub device: u32,
    /// Read or write.
    pub dir: Dir,
    /// Byte offset on its device.
    pub offset: u64,
    /// Length, bytes.
    pub len: u32,
}

/// What one parsed line does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A read or write: direction, offset, length.
    Io(Dir, u64, u32),
    /// A trim or discard (passed over).
    Trim,
    /// A sync or flush (passed over).
    Sync,
    /// A pause, ns (fio v2's `wait`).
    Wait(u64),
    /// A file action (fio's add, open, close): nothing to replay.
    File,
}

/// One parsed line: its time (when the format has one), device and action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Trace time, ns (`None`: the format has no timestamps).
    pub at_ns: Option<u64>,
    /// The file or device it names.
    pub device: &'a str,
    /// What it does.
    pub action: Action,
}

/// `text` as a number, or `WHAT "TEXT" is not a number`.
pub(crate) fn number<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{what} {text:?} is not a number"))
}

/// A trace that cannot be read, in one line: `FILE:LINE: WHAT` (or `FILE: WHAT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The trace file as the user named it.
    pub file: String,
    /// The line, from 1; 0: the file as a whole.
    pub line: u64,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.what),
            n => write!(f, "{}:{n}: {}", self.file, self.what),
        }
    }
}

impl std::error::Error for TraceError {}

/// A trace file's lines, one at a time through a bounded buffer.
struct Lines {
    file: String,
    input: BufReader<File>,
    buf: Vec<u8>,
    line: u64,
}

impl Lines {
    fn error(&self, what: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.line,
            what,
        }
    }

    /// Read the next line into the buffer; false at the end.
    fn read(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        self.line += 1;
        let limit = MAX_LINE as u64 + 1;
        let n = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.error(format!("cannot read the trace: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        if self.buf.len() > MAX_LINE && self.buf.last() != Some(&b'\n') {
            return Err(self.error(format!("a line longer than {MAX_LINE} bytes")));
        }
        if std::str::from_utf8(&self.buf).is_err() {
            return Err(self.error("not text (a byte that is not UTF-8)".into()));
        }
        Ok(true)
    }

    /// The line last read, as text.
    fn text(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or_default()
    }
}

/// A trace read one line at a time.
pub struct Reader {
    lines: Lines,
    format: Format,
    /// fio v2: the waits so far, ns.
    clock_ns: u64,
    /// blkparse: its summary began.
    ended: bool,
    /// The first line, when it is already an event (blkparse).
    pending: bool,
    devices: Vec<String>,
    trims: u64,
    syncs: u64,
}

impl Reader {
    /// Open `path` and tell its format from its first line.
    pub fn open(path: &Path) -> Result<Reader, TraceError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|e| TraceError {
            file: file.clone(),
            line: 0,
            what: format!("cannot open the trace: {e}"),
        })?;
        let mut lines = Lines {
            file,
            input: BufReader::with_capacity(READ_BUFFER, f),
            buf: Vec::with_capacity(MAX_LINE),
            line: 0,
        };
        let read = lines.read();
        let b = &lines.buf;
        let magic = b.len() >= 4 && (b[1..4] == [0x74, 0x61, 0x65] || b[..3] == [0x65, 0x61, 0x74]);
        if magic {
            return Err(lines.error(
                "a binary blktrace file, which storlab does not read (turn it into text with \
                 `blkparse -i NAME -o FILE` and replay that)"
                    .into(),
            ));
        }
        read?;
        let first = lines.text().trim();
        let (format, pending) = if first == fio::V2_HEADER {
            (Format::FioV2, false)
        } else if first == fio::V3_HEADER {
            (Format::FioV3, false)
        } else if blkparse::looks_like(first) {
            (Format::Blkparse, true)
        } else {
            let shown: String = first.chars().take(40).collect();
            return Err(lines.error(format!(
                "first line {shown:?} is not a trace format storlab reads (allowed: {ALLOWED_FORMATS})"
            )));
        };
        Ok(Reader {
            lines,
            format,
            clock_ns: 0,
            ended: false,
            pending,
            devices: Vec::new(),
            trims: 0,
            syncs: 0,
        })
    }

    /// The trace's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The devices seen so far, in order of first appearance.
    pub fn devices(&self) -> &[String] {
        &self.devices
    }

    /// Trims and syncs passed over so far.
    pub fn passed_over(&self) -> (u64, u64) {
        (self.trims, self.syncs)
    }

    /// The next read or write, passing over everything else; `None` at the end.
    pub fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        loop {
            if self.pending {
                self.pending = false;
            } else if self.ended || !self.lines.read()? {
                return Ok(None);
            }
            let text = self.lines.text();
            let parsed = match self.format {
                Format::FioV2 => fio::parse(text, false),
                Format::FioV3 => fio::parse(text, true),
                Format::Blkparse => match blkparse::parse(text) {
                    Ok(blkparse::Parsed::Event(e)) => Ok(e),
                    Ok(blkparse::Parsed::Summary) => {
                        self.ended = true;
                        return Ok(None);
                    }
                    Err(e) => Err(e),
                },
            };
            let line = match parsed {
                Ok(Some(l)) => l,
                Ok(None) => continue,
                Err(what) => return Err(self.lines.error(what)),
            };
            let at_ns = line.at_ns.unwrap_or(self.clock_ns);
            let (dir, offset, len) = match line.action {
                Action::Io(dir, offset, len) => (dir, offset, len),
                Action::Trim => {
                    self.trims += 1;
                    continue;
                }
                Action::Sync => {
                    self.syncs += 1;
                    continue;
                }
                Action::Wait(ns) => {
                    self.clock_ns = self.clock_ns.saturating_add(ns);
                    continue;
                }
                Action::File => continue,
            };
            if offset.checked_add(len as u64).is_none() {
                return Err(self.lines.error(format!(
                    "offset {offset} + length {len} is past the largest offset"
                )));
            }
            let device = match self.devices.iter().position(|d| d == line.device) {
                Some(i) => i,
                None => {
                    self.devices.push(line.device.to_string());
                    self.devices.len() - 1
                }
            } as u32;
            return Ok(Some(TraceIo {
                at_ns,
                device,
                dir,
                offset,
                len,
            }));
        }
    }
}

/// Round a trace's extent up to this for the region each device gets.
const REGION_ROUND: u64 = 1 << 20;

/// `spec` made to replay `replay` with at most `iodepth` I/Os in flight: one
/// group `replay` of one VM with one worker and one disk per trace device
/// (device `k` is disk `k`, so target `k % targets`), buffers as large as
/// the trace's largest I/O, its share of reads (so a trace of reads opens
/// its targets read-only), and a region per device that holds the trace's
/// furthest I/O (`spec.size` when that is larger), rounded up to 1 MiB.
/// `spec`'s other settings (direct, sync, ioengine, offset, disk_layout,
/// runtime as a cap) stay as they are.
pub fn point(mut spec: Spec, replay: Replay, iodepth: u32) -> Spec {
    let sh = &replay.shape;
    let mut group = super::default_group("replay");
    group.disks_per_vm = sh.devices.len().max(1) as u32;
    let a = &mut group.access;
    a.bs = super::BlockSizes::one(sh.max_len.max(1) as u64);
    a.read_pct = match (sh.reads * 100).checked_div(sh.ios) {
        Some(pct) if sh.reads < sh.ios => pct.min(99) as u8,
        _ => 100,
    };
    a.iodepth = iodepth.max(1);
    spec.size = spec
        .size
        .max(sh.extent.div_ceil(REGION_ROUND) * REGION_ROUND);
    spec.groups = vec![group];
    spec.label = format!(
        "replay {}",
        replay
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    spec.replay = Some(replay);
    spec
}

/// Read the whole trace once, line by line, checking every line: its format
/// and shape, or the first line that is wrong.
pub fn scan(path: &Path) -> Result<(Format, Shape), TraceError> {
    let mut r = Reader::open(path)?;
    let mut s = Shape::default();
    while let Some(io) = r.next_io()? {
        s.ios += 1;
        s.reads += (io.dir == Dir::Read) as u64;
        s.bytes += io.len as u64;
        s.max_len = s.max_len.max(io.len);
        s.extent = s.extent.max(io.offset + io.len as u64);
        s.span_ns = s.span_ns.max(io.at_ns);
    }
    (s.trims, s.syncs) = r.passed_over();
    s.devices = r.devices;
    Ok((r.format, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A trace file, removed when dropped.
    struct Temp(PathBuf);

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// A trace file of `text` in the temporary directory.
    fn trace(name: &str, text: &[u8]) -> (Temp, PathBuf) {
        let path =
            std::env::temp_dir().join(format!("storlab-replay-{}-{name}", std::process::id()));
        File::create(&path).unwrap().write_all(text).unwrap();
        (Temp(path.clone()), path)
    }

    fn all(path: &Path) -> Result<Vec<TraceIo>, TraceError> {
        let mut r = Reader::open(path)?;
        let mut v = Vec::new();
        while let Some(io) = r.next_io()? {
            v.push(io);
        }
        Ok(v)
    }

    #[test]
    fn fio_v2_waits_move_the_clock() {
        let (_d, p) = trace(
            "v2.log",
            b"fio version 2 iolog\n/a add\n/b add\n/a open\n/a write 0 4096\n/a wait 250 0\n\
              /b read 8192 512\n/a trim 0 4096\n/a sync 0 0\n/a wait 1000 0\n/a read 4096 4096\n/a close\n",
        );
        let ios = all(&p).unwrap();
        let got: Vec<_> = ios
            .iter()
            .map(|i| (i.at_ns, i.device, i.dir, i.offset, i.len))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, Dir::Write, 0, 4096),
                (250_000, 1, Dir::Read, 8192, 512),
                (1_250_000, 0, Dir::Read, 4096, 4096)
            ]
        );
        let (format, shape) = scan(&p).unwrap();
        assert_eq!(format, Format::FioV2);
        assert_eq!(
            (shape.ios, shape.reads, shape.trims, shape.syncs),
            (3, 2, 1, 1)
        );
        assert_eq!(shape.devices, ["/a", "/b"]);
        assert_eq!(
            (shape.extent, shape.max_len, shape.span_ns),
            (8704, 4096, 1_250_000)
        );
    }

    #[test]
    fn fio_v3_keeps_its_timestamps() {
        let (_d, p) = trace(
            "v3.log",
            b"fio version 3 iolog\n2 dev add\n872 dev open\n878 dev write 0 16384\n888 dev read 16384 16384\n10001677 dev close\n",
        );
        let ios = all(&p).unwrap();
        assert_eq!(
            ios.iter().map(|i| i.at_ns).collect::<Vec<_>>(),
            [878_000, 888_000]
        );
        assert_eq!(scan(&p).unwrap().0, Format::FioV3);
    }

    #[test]
    fn blkparse_stops_at_its_summary() {
        let (_d, p) = trace(
            "blk.txt",
            b"  8,0    1        1     0.000000000  4162  Q  WS 3417048 + 8 [kjournald]\n\
              \x20 8,0    1        2     0.000003000  4162  D  WS 3417048 + 8 [kjournald]\n\
              \x20 8,16   0        3     0.500000000  4163  Q   R 100 + 16 [cat]\n\
              CPU0 (8,0):\n Reads Queued:  1, 8KiB\n",
        );
        let ios = all(&p).unwrap();
        assert_eq!(ios.len(), 2);
        assert_eq!(
            (ios[1].at_ns, ios[1].device, ios[1].offset, ios[1].len),
            (500_000_000, 1, 51_200, 8192)
        );
        assert_eq!(scan(&p).unwrap().1.devices, ["8,0", "8,16"]);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_number() {
        let (_d, p) = trace("t.log", b"fio version 2 iolog\n/a add\n/a read x12 4096\n");
        let e = scan(&p).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{}:3: offset \"x12\" is not a number", p.display())
        );
        let (_d, p) = trace("long.log", &[b'x'; MAX_LINE + 10]);
        assert!(
            scan(&p)
                .unwrap_err()
                .to_string()
                .ends_with(":1: a line longer than 4096 bytes")
        );
    }

    #[test]
    fn unknown_formats_and_missing_files_are_named() {
        let (_d, p) = trace("x.csv", b"time,offset,len\n1,2,3\n");
        let e = scan(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:1: first line \"time,offset,len\" is not a trace format",
                p.display()
            )),
            "{e}"
        );
        assert!(
            e.contains("fio iolog version 2") && e.contains("blkparse"),
            "{e}"
        );
        let (_d, p) = trace("bin", &[0x07, 0x74, 0x61, 0x65, 0xff, 0xfe, 0x00, 0x01]);
        assert!(
            scan(&p)
                .unwrap_err()
                .to_string()
                .contains("binary blktrace")
        );
        let e = scan(Path::new("/nonexistent/trace.log"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/nonexistent/trace.log: cannot open the trace: "),
            "{e}"
        );
    }

    /// Lines cut, spliced and byte-flipped from valid ones never panic a
    /// parser, and every error is one line.
    #[test]
    fn mangled_lines_give_one_line_errors_not_panics() {
        let seeds = [
            "872 /dev/vdb write 8192 16384",
            "/dev/vdb read 4096 512",
            "/dev/vdb wait 1500 0",
            "  8,0    1        1     0.000000000  4162  Q  WS 3417048 + 8 [kjournald]",
            "CPU0 (8,0):",
        ];
        let mut rng = crate::workload::rng::Rng::new(7);
        let noise = [
            "",
            " ",
            "+",
            ",",
            ".",
            "-1",
            "99999999999999999999999",
            "Q",
            "x",
            "\u{e9}",
        ];
        for _ in 0..20_000 {
            let base = seeds[rng.below(seeds.len() as u64) as usize];
            let cut = rng.below(base.len() as u64 + 1) as usize;
            let cut = (0..=cut)
                .rev()
                .find(|&c| base.is_char_boundary(c))
                .unwrap_or(0);
            let line = format!(
                "{}{}{}",
                &base[..cut],
                noise[rng.below(noise.len() as u64) as usize],
                &seeds[rng.below(seeds.len() as u64) as usize][cut.min(5)..]
            );
            for e in [
                fio::parse(&line, false).err(),
                fio::parse(&line, true).err(),
                blkparse::parse(&line).err(),
            ]
            .into_iter()
            .flatten()
            {
                assert!(!e.is_empty() && !e.contains('\n'), "{line:?}: {e:?}");
            }
        }
    }

    #[test]
    fn speed_scales_due_times() {
        let mut r = Replay {
            path: "t".into(),
            format: Format::FioV3,
            speed: 1.0,
            shape: Shape::default(),
        };
        assert_eq!(r.due_ns(3_000), 3_000);
        r.speed = 2.0;
        assert_eq!(r.due_ns(3_000), 1_500);
        r.speed = 0.5;
        assert_eq!(r.due_ns(3_000), 6_000);
    }
}
