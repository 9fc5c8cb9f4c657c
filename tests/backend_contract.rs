//! The backend contract (`storlab::io::Backend`'s docs), checked against every
//! backend: null, file (io_uring, and psync: `file+psync`), a file capped at
//! an FC link and at an FCoE link, NFSv3 and NFSv4 (nfs-ganesha), iSCSI (tgt)
//! and NBD (nbdkit), the protocols also with `nconnect=2` (two connections or
//! sessions per target). Each line of the table at the bottom is one
//! backend; a new backend gets every check by adding its line.
//!
//! The protocol backends run against a lab of their own (`storlab lab up
//! --net loopback`, 64 MiB, servers started, restarted and stopped by PID by
//! the lab, taken down on drop); those labs come up one at a time. The checks,
//! in order: open and size; aligned I/O; unaligned I/O; queue full; reads at
//! the end; flush and FUA (sync writes); timeout (a stalled server); error
//! propagation and reopen after a server restart. Where a check cannot apply
//! (the null backend has no size and moves no data; a local file has no server
//! to stall or restart) the table says so and the test prints what it left out.

mod support;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use storlab::backends;
use storlab::io::{Backend, BackendError, BufferPool, Io, Lane, OpenOptions, QueueError, Wait};
use storlab::plan::Disk;
use storlab::target::Target;
use storlab::workload::{Content, Dir, IoEngine, SyncMode, content};
use support::Stopped;
use support::lab::Lab;

/// Size of every disk the checks use.
const SIZE: u64 = 64 << 20;
/// Block size of the aligned I/O.
const BS: u32 = 4096;
/// How long any one reap may wait before a check gives up.
const WAIT: Duration = Duration::from_secs(20);

/// Labs come up one at a time: four at once are too much for a small machine.
static LABS: Mutex<()> = Mutex::new(());

/// One backend, and what its storage does where the contract leaves a choice.
struct Row {
    /// `null`, `file`, or the lab's target name (`nfs3`, `nfs4`, `iscsi`, `nbd`),
    /// with `?query` to add to its URL (`nbd?nconnect=2`, `file?fc=8gfc`, `file?fcoe=10gbe`).
    target: &'static str,
    /// The lab server behind it, to stall and restart.
    server: Option<&'static str>,
    /// Whether data written is read back (the null backend moves none).
    moves_data: bool,
    /// Whether opening refuses a disk smaller than `size_needed` (files are
    /// sized by prepare, not by the backend; null has no size).
    knows_size: bool,
    /// What an unaligned request does.
    unaligned: Unaligned,
    /// Words of which `features()` names one under sync writes (empty: the
    /// backend does not say).
    sync_says: &'static [&'static str],
}

/// What an unaligned request does on a row's storage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unaligned {
    /// It completes, and reads back what was written.
    Carried,
    /// It fails alone with EINVAL.
    Einval,
    /// The local file system decides, request by request (each completes in
    /// full or fails alone with EINVAL): with O_DIRECT, ext4 carries some
    /// unaligned requests through the page cache (here a read, and at times
    /// a write) and refuses others; XFS refuses them.
    Either,
}

/// Where a row's storage lives, removed on drop.
enum Place {
    Null,
    File(PathBuf),
    Lab(Lab),
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::File(p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A row's storage and how to open its backend.
struct Fixture {
    row: &'static Row,
    place: Place,
    target: Target,
    /// The file backend's engine: `file+psync` is psync, the rest io_uring.
    engine: IoEngine,
}

impl Fixture {
    fn new(row: &'static Row) -> Fixture {
        // `kind?query`: the query (nconnect=N, fc=LINK, fcoe=LINK) goes on the URL.
        let (kind, query) = match row.target.split_once('?') {
            Some((k, q)) => (k, format!("?{q}")),
            None => (row.target, String::new()),
        };
        let (kind, engine) = match kind.split_once('+') {
            Some((k, "psync")) => (k, IoEngine::Psync),
            _ => (kind, IoEngine::IoUring),
        };
        let tag = row.target.replace(['?', '=', '+'], "-");
        let (place, url) = match kind {
            "null" => (Place::Null, "null:".to_string()),
            "file" => {
                let p = std::env::temp_dir()
                    .join(format!("storlab-contract-{}-{tag}.img", std::process::id()));
                std::fs::File::create(&p)
                    .and_then(|f| f.set_len(SIZE))
                    .unwrap();
                let url = format!("file:{}{query}", p.display());
                (Place::File(p), url)
            }
            name => {
                let lab = Lab::builder(&format!("contract-{tag}"), "64m")
                    .loopback()
                    .up();
                let url = lab.url(name);
                let url = match (url.contains('?'), query.strip_prefix('?')) {
                    (true, Some(q)) => format!("{url}&{q}"),
                    _ => format!("{url}{query}"),
                };
                (Place::Lab(lab), url)
            }
        };
        let target = Target::parse(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
        let printed = target.to_string();
        assert!(
            printed.contains(&query[query.len().min(1)..]),
            "{printed} lost {query}"
        );
        Fixture {
            row,
            place,
            target,
            engine,
        }
    }

    fn url(&self) -> String {
        self.target.to_string()
    }

    fn open(
        &self,
        write: bool,
        depth: u32,
        sync: Option<SyncMode>,
        size_needed: u64,
    ) -> Result<Box<dyn Backend>, BackendError> {
        let path = self.target.local_path().map(|p| p.to_path_buf());
        let disk = Disk {
            target: self.url(),
            path,
            offset: 0,
            size: SIZE,
        };
        let opts = OpenOptions {
            direct: false,
            sync,
            write,
            depth,
            size_needed,
            ioengine: self.engine,
            ..OpenOptions::default()
        };
        backends::open(&self.target, &[&disk], &opts)
    }

    /// A lane of `depth` over the disk, with one buffer more than the depth.
    fn lane(&self, write: bool, depth: u32, sync: Option<SyncMode>) -> Lane {
        let b = self
            .open(write, depth, sync, 0)
            .unwrap_or_else(|e| panic!("open {}: {e}", self.url()));
        Lane::new(b, BufferPool::new(depth as usize + 1, 64 << 10)).unwrap()
    }

    fn lab(&self) -> &Lab {
        match &self.place {
            Place::Lab(l) => l,
            _ => unreachable!("{} has no lab", self.row.target),
        }
    }

    /// The PID of the row's server as the lab records it now.
    fn server_pid(&self, server: &str) -> i32 {
        let o = self.lab().cmd(&["status", "--json"]);
        let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        st["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == server)
            .and_then(|s| s["pid"].as_i64())
            .unwrap_or_else(|| panic!("no {server} in {st}")) as i32
    }
}

/// The data of the block at `offset` (the same for every write of it).
fn data(offset: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    content::fill(&mut v, Content::Random, 7, offset);
    v
}

/// `n` blocks of `BS` from block `first` on, scattered over the disk.
fn blocks(dir: Dir, first: u64, n: u64) -> Vec<Io> {
    (first..first + n)
        .map(|i| Io::new(dir, (i * 389 % (SIZE / BS as u64 / 2)) * BS as u64, BS))
        .collect()
}

/// Run `ios` at `depth`: writes carry [`data`]; every request must complete
/// in full, and reads of a backend that moves data must find [`data`].
fn io(l: &mut Lane, ios: &[Io], depth: usize, check: bool) {
    let fill = |i: usize, buf: &mut [u8]| {
        if ios[i].dir == Dir::Write {
            buf.copy_from_slice(&data(ios[i].offset, buf.len()));
        } else {
            buf.fill(0xEE);
        }
    };
    let done = |i: usize, r: Result<u32, i32>, buf: &[u8]| {
        let Io {
            dir, offset, len, ..
        } = ios[i];
        if r != Ok(len) {
            return Err(format!("{dir:?} of {len} at {offset}: {r:?}"));
        }
        if check && dir == Dir::Read && buf != data(offset, len as usize) {
            return Err(format!("read of {len} at {offset}: not the data written"));
        }
        Ok(())
    };
    l.run(ios, depth, WAIT, fill, done)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// One request alone: its completion's result.
fn one(l: &mut Lane, dir: Dir, offset: u64, len: u32) -> Result<u32, i32> {
    l.queue(0, 0, dir, offset, len).unwrap();
    l.commit().unwrap();
    let mut out = Vec::new();
    while out.is_empty() {
        assert!(
            l.reap(Wait::at_least(1).or_after(WAIT), &mut out).unwrap() > 0,
            "no answer"
        );
    }
    out[0].result
}

/// Open with the size the disk has, and refuse one byte more, naming the
/// target and both sizes.
fn open_and_size(f: &Fixture) {
    let b = f.open(false, 4, None, SIZE).unwrap();
    assert_eq!(b.depth(), 4);
    assert!(!b.name().is_empty());
    println!("{}: {}", f.url(), backends::describe(b.as_ref(), None));
    // The row's engine is the one that runs.
    assert_eq!(
        b.features().starts_with("psync"),
        f.engine == IoEngine::Psync,
        "{}",
        b.features()
    );
    if !f.row.knows_size {
        println!("{}: open and size: no size to check", f.row.target);
        return;
    }
    let e = f.open(false, 4, None, SIZE + 1).err().unwrap().to_string();
    assert!(e.starts_with(&f.url()), "{e}");
    assert!(
        e.contains(&SIZE.to_string()) && e.contains(&(SIZE + 1).to_string()),
        "{e}"
    );
}

/// 4 KiB writes at QD 16, read back through a second connection.
fn aligned_io(f: &Fixture) {
    let check = f.row.moves_data;
    io(
        &mut f.lane(true, 16, None),
        &blocks(Dir::Write, 0, 64),
        16,
        false,
    );
    io(
        &mut f.lane(false, 16, None),
        &blocks(Dir::Read, 0, 64),
        16,
        check,
    );
}

/// 1000 bytes at offset 100: carried, or failed alone with EINVAL.
fn unaligned_io(f: &Fixture) {
    let mut l = f.lane(true, 4, None);
    let ios = [
        Io::write(SIZE / 2 + 100, 1000),
        Io::read(SIZE / 2 + 100, 1000),
    ];
    match f.row.unaligned {
        Unaligned::Carried => {
            io(&mut l, &ios[..1], 1, false);
            io(&mut l, &ios[1..], 1, f.row.moves_data);
        }
        Unaligned::Einval => {
            for o in ios {
                assert_eq!(one(&mut l, o.dir, o.offset, o.len), Err(libc::EINVAL));
            }
        }
        Unaligned::Either => {
            for o in ios {
                let r = one(&mut l, o.dir, o.offset, o.len);
                assert!(r == Ok(o.len) || r == Err(libc::EINVAL), "{o:?}: {r:?}");
                println!("{}: unaligned {:?}: {r:?}", f.row.target, o.dir);
            }
        }
    }
    // The backend goes on.
    io(&mut l, &blocks(Dir::Read, 0, 4), 4, f.row.moves_data);
}

/// `depth` requests are accepted; one more is Busy until some are reaped.
fn queue_full(f: &Fixture) {
    let mut l = f.lane(false, 4, None);
    for s in 0..4 {
        l.queue(s, 0, Dir::Read, s as u64 * BS as u64, BS).unwrap();
    }
    assert!(matches!(
        l.queue(4, 0, Dir::Read, 0, BS),
        Err(QueueError::Busy)
    ));
    l.commit().unwrap();
    let mut out = Vec::new();
    while out.len() < 4 {
        assert!(
            l.reap(Wait::at_least(4).or_after(WAIT), &mut out).unwrap() > 0,
            "no answer"
        );
    }
    assert!(out.iter().all(|c| c.result == Ok(BS)), "{out:?}");
    l.queue(4, 0, Dir::Read, 0, BS).unwrap();
}

/// A read across the end, and one at the end, never complete in full (an
/// errno or a short count); the backend goes on.
fn reads_at_the_end(f: &Fixture) {
    if !f.row.moves_data {
        println!("{}: reads at the end: no end to read at", f.row.target);
        return;
    }
    let mut l = f.lane(false, 4, None);
    let across = one(&mut l, Dir::Read, SIZE - BS as u64, 2 * BS);
    assert_ne!(across, Ok(2 * BS), "read across the end");
    assert!(
        matches!(across, Ok(n) if n == BS) || across.is_err(),
        "{across:?}"
    );
    let past = one(&mut l, Dir::Read, SIZE, BS);
    assert!(matches!(past, Ok(0) | Err(_)), "read at the end: {past:?}");
    assert_eq!(one(&mut l, Dir::Read, 0, BS), Ok(BS));
}

/// Sync writes complete, say how they are made durable, and read back.
fn flush_and_fua(f: &Fixture) {
    let mut l = f.lane(true, 8, Some(SyncMode::Dsync));
    let features = l.backend().features();
    if !f.row.sync_says.is_empty() {
        assert!(
            f.row.sync_says.iter().any(|w| features.contains(w)),
            "{features}"
        );
    }
    let ios = blocks(Dir::Write, 100, 32);
    io(&mut l, &ios, 8, false);
    drop(l);
    let reads: Vec<Io> = ios.iter().map(|o| Io::read(o.offset, o.len)).collect();
    io(&mut f.lane(false, 8, None), &reads, 8, f.row.moves_data);
}

/// reap returns once its timeout passed with fewer than `min`, not an error;
/// with nothing in flight it returns at once.
fn timeout(f: &Fixture) {
    let mut l = f.lane(false, 4, None);
    let mut out = Vec::new();
    let t = Instant::now();
    assert_eq!(
        l.reap(Wait::at_least(1).or_after(Duration::from_secs(5)), &mut out)
            .unwrap(),
        0
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    let Some(server) = f.row.server else {
        println!("{}: timeout: no server to stall", f.row.target);
        return;
    };
    let stopped = Stopped::new(f.server_pid(server));
    l.queue(0, 0, Dir::Read, 0, BS).unwrap();
    l.commit().unwrap();
    let t = Instant::now();
    let limit = Duration::from_millis(300);
    let n = l.reap(Wait::at_least(1).or_after(limit), &mut out).unwrap();
    assert_eq!(n, 0, "{server} answered while stopped: {out:?}");
    let took = t.elapsed();
    assert!(took >= limit && took < limit * 10, "{took:?}");
    assert_eq!(
        l.reap(Wait::at_least(1).or_after(Duration::ZERO), &mut out)
            .unwrap(),
        0
    );
    drop(stopped);
    assert_eq!(
        l.reap(Wait::at_least(1).or_after(WAIT), &mut out).unwrap(),
        1
    );
    assert_eq!(out[0].result, Ok(BS));
}

/// Until the backend reports itself broken: the error, which names the target.
fn broken(l: &mut Lane) -> BackendError {
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "the backend never broke");
        if l.in_flight() == 0
            && let Err(QueueError::Fatal(e)) = l.queue(0, 0, Dir::Read, 0, BS)
        {
            return e;
        }
        if let Err(e) = l.commit() {
            return e;
        }
        out.clear();
        let one = Wait::at_least(1).or_after(Duration::from_millis(200));
        if let Err(e) = l.reap(one, &mut out) {
            return e;
        }
    }
}

/// The server restarts: the open backend fails naming the target (error
/// propagation); a new one reads what was written before.
fn restart(f: &Fixture) {
    let Some(server) = f.row.server else {
        if let Some(p) = f.target.local_path() {
            // A file has no server; what can vanish is the file itself: the
            // backend says so naming it, and a new file opens again.
            let mut l = f.lane(false, 4, None);
            std::fs::remove_file(p).unwrap();
            let e = l.check().unwrap_err().to_string();
            // The file's own URL (an FC-capped target's storage is its file).
            assert!(e.starts_with(&f.target.storage().to_string()), "{e}");
            drop(l);
            std::fs::File::create(p)
                .and_then(|f| f.set_len(SIZE))
                .unwrap();
            io(
                &mut f.lane(false, 4, None),
                &blocks(Dir::Read, 0, 4),
                4,
                false,
            );
            println!(
                "{}: restart: no server; the file's removal was checked instead",
                f.row.target
            );
        } else {
            println!("{}: restart: no server to restart", f.row.target);
        }
        return;
    };
    let ios = blocks(Dir::Write, 200, 16);
    io(&mut f.lane(true, 4, Some(SyncMode::Dsync)), &ios, 4, false);
    let mut l = f.lane(false, 4, None);
    io(&mut l, &blocks(Dir::Read, 200, 4), 4, true);
    let o = f.lab().cmd(&["restart", server]);
    assert!(o.status.success(), "{}", support::text(&o));
    let e = broken(&mut l).to_string();
    assert!(e.starts_with(&f.url()), "{e}");
    drop(l);
    let reads: Vec<Io> = ios.iter().map(|o| Io::read(o.offset, o.len)).collect();
    io(&mut f.lane(false, 4, None), &reads, 4, true);
}

/// A check's name and body.
type Check = (&'static str, fn(&Fixture));

/// Every check, in order, against `row`'s backend.
fn contract(row: &'static Row) {
    let _one_lab = row
        .server
        .map(|_| LABS.lock().unwrap_or_else(|e| e.into_inner()));
    let f = Fixture::new(row);
    let checks: [Check; 8] = [
        ("open and size", open_and_size),
        ("aligned I/O", aligned_io),
        ("unaligned I/O", unaligned_io),
        ("queue full", queue_full),
        ("reads at the end", reads_at_the_end),
        ("flush and FUA", flush_and_fua),
        ("timeout", timeout),
        ("restart", restart),
    ];
    for (name, check) in checks {
        println!("{}: {name}", row.target);
        check(&f);
    }
}

/// One `#[test]` per backend line.
macro_rules! backends {
    ($($name:ident: $row:expr;)*) => {
        $(
            #[test]
            fn $name() {
                static ROW: Row = $row;
                contract(&ROW);
            }
        )*
    };
}

backends! {
    null: Row { target: "null", server: None, moves_data: false, knows_size: false, unaligned: Unaligned::Carried, sync_says: &[] };
    file: Row { target: "file", server: None, moves_data: true, knows_size: false, unaligned: Unaligned::Carried, sync_says: &[] };
    psync: Row { target: "file+psync", server: None, moves_data: true, knows_size: false, unaligned: Unaligned::Carried, sync_says: &[] };
    nfs3: Row { target: "nfs3", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    nfs4: Row { target: "nfs4", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    nfs41: Row { target: "nfs41", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    iscsi: Row { target: "iscsi", server: Some("tgtd"), moves_data: true, knows_size: true, unaligned: Unaligned::Einval, sync_says: &["FUA", "SYNCHRONIZE CACHE"] };
    nbd: Row { target: "nbd", server: Some("nbdkit"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FUA", "flush"] };
    fc: Row { target: "file?fc=8gfc", server: None, moves_data: true, knows_size: false, unaligned: Unaligned::Either, sync_says: &[] };
    fcoe: Row { target: "file?fcoe=10gbe", server: None, moves_data: true, knows_size: false, unaligned: Unaligned::Either, sync_says: &[] };
    nfs3_nconnect: Row { target: "nfs3?nconnect=2", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    nfs4_nconnect: Row { target: "nfs4?nconnect=2", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    nfs41_nconnect: Row { target: "nfs41?nconnect=2", server: Some("ganesha"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FILE_SYNC"] };
    iscsi_nconnect: Row { target: "iscsi?nconnect=2", server: Some("tgtd"), moves_data: true, knows_size: true, unaligned: Unaligned::Einval, sync_says: &["FUA", "SYNCHRONIZE CACHE"] };
    nbd_nconnect: Row { target: "nbd?nconnect=2", server: Some("nbdkit"), moves_data: true, knows_size: true, unaligned: Unaligned::Carried, sync_says: &["FUA", "flush"] };
}
