//! The durability journal and the saved map: one record format for both.
//!
//! A file starts with a 16-byte header (an 8-byte magic, `STLBJRNL` for a
//! journal or `STLBVMAP` for a map, a u32 format version and the u32 run id),
//! then records: `u32 kind, u32 length, payload, u64 hash64 of the three`.
//! Kinds: 1 declares a store (JSON [`StoreInfo`]), 2 lists acknowledged
//! writes, 3 lists writes that were issued but never acknowledged (maps only).
//! A write list is a run of 32-byte [`WriteRec`]s.
//!
//! **Journal durability.** An engine thread hands a write to the journal only
//! after the storage acknowledged it. A flusher thread appends what was handed
//! over at most every [`FLUSH_EVERY`] and then calls `fdatasync`; the journal
//! therefore never holds a write that was not acknowledged, and a write counts
//! as journaled only once the `fdatasync` that follows it returned. A crash of
//! storlab itself loses at most the last flush interval of records: those
//! writes are then simply not claimed (never a false claim). A torn last record
//! (a crash mid-append) is ignored on reading; a bad record followed by good
//! ones is corruption and refused.

use super::SetupError;
use super::format::hash64;
use crate::workload::Content;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a store was prepared (from its prepare marker), so blocks the run
/// never wrote can be checked against `content::prepared_bytes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreparedInfo {
    /// Content of the fill.
    pub content: Content,
    /// Its seed.
    pub seed: u64,
    /// Bytes filled from offset 0.
    pub size: u64,
    /// Fill chunk size (`prepare::CHUNK`).
    pub chunk: u64,
}

/// One store: a file, or a whole protocol target (LUN, export, NFS file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreInfo {
    /// Its name in reports: `file:PATH` or the target URL.
    pub name: String,
    /// The target URL it belongs to.
    pub target: String,
    /// The file, for file targets.
    pub path: Option<PathBuf>,
    /// Bytes the run used on it (from offset 0).
    pub size: u64,
    /// Its prepared content, when storlab prepared it.
    pub prepared: Option<PreparedInfo>,
    /// What the storage said it is ([`crate::io::Backend::identity`]: a
    /// file's device and inode, an NFS file's fileid and handle, a LUN's
    /// NAA); `None` when it said nothing. Absent in maps and journals of
    /// storlab before it had identities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

impl StoreInfo {
    /// What the store is known by in verify headers and maps: the storage's
    /// identity where it gave one, else its name. Two targets that reach the
    /// same storage share a key.
    pub fn key(&self) -> &str {
        self.identity.as_deref().unwrap_or(&self.name)
    }
}

/// Magic of a journal file.
pub const JOURNAL_MAGIC: [u8; 8] = *b"STLBJRNL";
/// Magic of a saved map file.
pub const MAP_MAGIC: [u8; 8] = *b"STLBVMAP";
/// Format version of both.
pub const VERSION: u32 = 1;
/// Longest time between an acknowledged write and the journal flush that
/// makes its record durable (while the run goes on).
pub const FLUSH_EVERY: Duration = Duration::from_millis(10);

const KIND_STORE: u32 = 1;
const KIND_WRITES: u32 = 2;
const KIND_DOUBT: u32 = 3;
const REC: usize = 32;

/// `count` consecutive verify blocks from block `first` of store `store`,
/// written with sequence number `seq` by worker `writer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRec {
    /// Store index, as declared by the file's store records.
    pub store: u32,
    /// Number of verify blocks.
    pub count: u32,
    /// First verify block number (offset / VBLOCK).
    pub first: u64,
    /// Write sequence number.
    pub seq: u64,
    /// Writer (worker index).
    pub writer: u32,
}

impl WriteRec {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.store.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.first.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.writer.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    fn decode(b: &[u8]) -> WriteRec {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        WriteRec {
            store: u32_at(0),
            count: u32_at(4),
            first: u64_at(8),
            seq: u64_at(16),
            writer: u32_at(24),
        }
    }
}

/// One record of a journal or map.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Declares store `index` for the records that follow.
    Store(u32, StoreInfo),
    /// Acknowledged writes.
    Writes(Vec<WriteRec>),
    /// Writes issued but never acknowledged: the block may hold them or the
    /// previous acknowledged version.
    Doubt(Vec<WriteRec>),
}

fn frame(kind: u32, payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let sum = hash64(kind as u64, &out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
}

/// Append the encoding of `r` to `out`.
pub fn encode(r: &Record, out: &mut Vec<u8>) {
    match r {
        Record::Store(index, info) => {
            let json = serde_json::to_vec(&(index, info)).expect("store info serializes");
            frame(KIND_STORE, &json, out);
        }
        Record::Writes(w) | Record::Doubt(w) => {
            let kind = if matches!(r, Record::Writes(_)) {
                KIND_WRITES
            } else {
                KIND_DOUBT
            };
            let mut p = Vec::with_capacity(w.len() * REC);
            for x in w {
                x.encode(&mut p);
            }
            frame(kind, &p, out);
        }
    }
}

/// The 16-byte file header.
pub fn file_header(magic: [u8; 8], run: u32) -> Vec<u8> {
    let mut h = magic.to_vec();
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&run.to_le_bytes());
    h
}

/// What a journal or map file holds.
#[derive(Debug)]
pub struct Contents {
    /// The magic (journal or map).
    pub magic: [u8; 8],
    /// The run that wrote it.
    pub run: u32,
    /// Its records, in order.
    pub records: Vec<Record>,
    /// Bytes of a torn last record that were ignored (a crash mid-append).
    pub torn_bytes: usize,
}

/// Read a journal or map file; errors name the file and the byte offset.
pub fn read(path: &Path) -> Result<Contents, String> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parse the bytes of a journal or map file.
pub fn parse(bytes: &[u8]) -> Result<Contents, String> {
    if bytes.len() < 16 || (bytes[..8] != JOURNAL_MAGIC && bytes[..8] != MAP_MAGIC) {
        return Err("not a storlab journal or verify map (bad magic)".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4"));
    if version != VERSION {
        return Err(format!(
            "format version {version}, this storlab reads version {VERSION}"
        ));
    }
    let mut out = Contents {
        magic: bytes[..8].try_into().expect("8"),
        run: u32::from_le_bytes(bytes[12..16].try_into().expect("4")),
        records: Vec::new(),
        torn_bytes: 0,
    };
    let mut at = 16usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let bad = |why: &str| -> Result<(), String> { Err(format!("record at byte {at}: {why}")) };
        if rest.len() < 16 {
            out.torn_bytes = rest.len();
            break;
        }
        let kind = u32::from_le_bytes(rest[0..4].try_into().expect("4"));
        let len = u32::from_le_bytes(rest[4..8].try_into().expect("4")) as usize;
        if rest.len() < 16 + len {
            out.torn_bytes = rest.len();
            break;
        }
        let sum = u64::from_le_bytes(rest[8 + len..16 + len].try_into().expect("8"));
        if sum != hash64(kind as u64, &rest[..8 + len]) {
            if at + 16 + len >= bytes.len() {
                out.torn_bytes = rest.len();
                break;
            }
            bad("checksum mismatch (the file is corrupt)")?;
        }
        let payload = &rest[8..8 + len];
        match kind {
            KIND_STORE => {
                let (index, info): (u32, StoreInfo) = serde_json::from_slice(payload)
                    .map_err(|e| format!("record at byte {at}: bad store record: {e}"))?;
                out.records.push(Record::Store(index, info));
            }
            KIND_WRITES | KIND_DOUBT => {
                if len % REC != 0 {
                    bad("write list length is not a multiple of 32")?;
                }
                let w: Vec<WriteRec> = payload.chunks_exact(REC).map(WriteRec::decode).collect();
                out.records.push(if kind == KIND_WRITES {
                    Record::Writes(w)
                } else {
                    Record::Doubt(w)
                });
            }
            k => bad(&format!("unknown record kind {k}"))?,
        }
        at += 16 + len;
    }
    Ok(out)
}

/// Write a whole file atomically (temporary file, fsync, rename, fsync of the
/// directory).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))
}

struct Inner {
    pending: Mutex<Vec<WriteRec>>,
    wake: Condvar,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
}

/// An open journal: engine threads [`Journal::record`] acknowledged writes; a
/// flusher thread appends and fdatasyncs them.
pub struct Journal {
    path: PathBuf,
    inner: Arc<Inner>,
    flusher: Option<JoinHandle<()>>,
}

impl Journal {
    /// Open `path` for run `run` and declare `stores` in it. A file that does
    /// not exist is created; a storlab journal of this run is appended to; a
    /// storlab journal of another run is replaced; anything else is refused.
    /// A path that names no file (no such directory) is
    /// [`SetupError::Input`]; a disk that is full, read-only or failing is
    /// [`SetupError::Environment`].
    pub fn open(path: &Path, run: u32, stores: &[(u32, StoreInfo)]) -> Result<Journal, SetupError> {
        let name = path.display();
        let existing = match std::fs::read(path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(SetupError::io(format!("cannot read journal {name}"), &e)),
        };
        let append = match &existing {
            None => false,
            Some(b) if b.is_empty() => false,
            Some(b) if b.len() >= 16 && b[..8] == JOURNAL_MAGIC => {
                u32::from_le_bytes(b[12..16].try_into().expect("4")) == run
            }
            Some(_) => {
                return Err(SetupError::Input(format!(
                    "refusing to use {name} as a journal: it exists and is not a storlab journal \
                     (name a new file)"
                )));
            }
        };
        let mut f = if append {
            OpenOptions::new().append(true).open(path)
        } else {
            File::create(path)
        }
        .map_err(|e| SetupError::io(format!("cannot open journal {name}"), &e))?;
        let mut head = if append {
            Vec::new()
        } else {
            file_header(JOURNAL_MAGIC, run)
        };
        for (i, s) in stores {
            encode(&Record::Store(*i, s.clone()), &mut head);
        }
        f.write_all(&head)
            .and_then(|_| f.sync_all())
            .map_err(|e| SetupError::io(format!("cannot write journal {name}"), &e))?;
        if !append && let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        let inner = Arc::new(Inner {
            pending: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
        });
        let i2 = Arc::clone(&inner);
        let p2 = path.to_path_buf();
        let flusher = std::thread::Builder::new()
            .name("storlab-journal".into())
            .spawn(move || flush_loop(f, &p2, &i2))
            .map_err(|e| {
                SetupError::Environment(format!("cannot start the journal thread: {e}"))
            })?;
        Ok(Journal {
            path: path.to_path_buf(),
            inner,
            flusher: Some(flusher),
        })
    }

    /// Hand over acknowledged writes (call only after the storage acknowledged them).
    pub fn record(&self, recs: &[WriteRec]) {
        let mut p = self.inner.pending.lock().expect("journal lock");
        p.extend_from_slice(recs);
    }

    /// Flush what is pending, stop the flusher; `Err` names the journal and
    /// what failed (a write that could not be journaled).
    pub fn close(mut self) -> Result<(), String> {
        self.shutdown();
        match self.inner.error.lock().expect("journal lock").take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        self.inner.wake.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn flush_loop(mut f: File, path: &Path, inner: &Inner) {
    loop {
        let stopping = inner.stop.load(Ordering::SeqCst);
        let batch = {
            let mut p = inner.pending.lock().expect("journal lock");
            if p.is_empty() && !stopping {
                p = inner
                    .wake
                    .wait_timeout(p, FLUSH_EVERY)
                    .expect("journal lock")
                    .0;
            }
            std::mem::take(&mut *p)
        };
        if !batch.is_empty() {
            let mut buf = Vec::with_capacity(batch.len() * REC + 16);
            encode(&Record::Writes(batch), &mut buf);
            if let Err(e) = f.write_all(&buf).and_then(|_| f.sync_data()) {
                let mut err = inner.error.lock().expect("journal lock");
                if err.is_none() {
                    *err = Some(format!("journal {}: {e}", path.display()));
                }
            }
        }
        if stopping && inner.pending.lock().expect("journal lock").is_empty() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> StoreInfo {
        StoreInfo {
            name: name.into(),
            target: name.into(),
            path: None,
            size: 1 << 20,
            prepared: None,
            identity: None,
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_ignored() {
        let mut b = file_header(JOURNAL_MAGIC, 7);
        encode(&Record::Store(0, info("nbd://x/y")), &mut b);
        let w = WriteRec {
            store: 0,
            count: 8,
            first: 16,
            seq: 3,
            writer: 1,
        };
        encode(&Record::Writes(vec![w, w]), &mut b);
        let full = b.len();
        encode(&Record::Writes(vec![w]), &mut b);
        let c = parse(&b).unwrap();
        assert_eq!(c.run, 7);
        assert_eq!(c.records.len(), 3);
        assert_eq!(c.records[1], Record::Writes(vec![w, w]));
        // Cut the last record short: it is ignored, the rest stays.
        let c = parse(&b[..b.len() - 5]).unwrap();
        assert_eq!(c.records.len(), 2);
        assert_eq!(c.torn_bytes, b.len() - 5 - full);
        // Damage in the middle is refused.
        let mut bad = b.clone();
        bad[full - 3] ^= 1;
        assert!(parse(&bad).unwrap_err().contains("checksum"));
        assert!(parse(b"hello world, this is not a journal").is_err());
    }

    #[test]
    fn journal_appends_only_what_was_recorded_and_refuses_foreign_files() {
        let dir = crate::workload::testing::temp_dir("jt");
        let p = dir.join("j");
        let j = Journal::open(&p, 9, &[(0, info("file:/a"))]).unwrap();
        let w = WriteRec {
            store: 0,
            count: 1,
            first: 2,
            seq: 5,
            writer: 0,
        };
        j.record(&[w]);
        j.close().unwrap();
        let c = read(&p).unwrap();
        assert_eq!(c.records[1], Record::Writes(vec![w]));
        let foreign = dir.join("f");
        std::fs::write(&foreign, b"user data").unwrap();
        let e = Journal::open(&foreign, 9, &[]).err().unwrap().to_string();
        assert!(e.contains("not a storlab journal"), "{e}");
        assert_eq!(std::fs::read(&foreign).unwrap(), b"user data");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
