//! Against a real nfs-ganesha (VFS FSAL) that each test starts and stops by
//! PID. NFSv4 runs on 127.0.0.1 in the root namespace (v4 needs no
//! rpcbind). ganesha serves NFSv3 only when it can register with rpcbind,
//! so the v3 test builds a storage host as `storlab lab up` does (a network
//! namespace with its own rpcbind, storlab's lab) and removes it after.
mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use storlab::backends::nfs::rpc::{Conn, NFS_PROG};
use storlab::backends::nfs::{NfsBackend, v3};
use storlab::io::{Backend, BufferPool, Io, Lane, OpenOptions, Wait};
use storlab::lab::netns::{self, Netns};
use storlab::lab::tools::{self, Tools};
use storlab::lab::{ganesha, ready, rpcbind};
use storlab::process::{self, Proc};
use storlab::target::{NfsTarget, Target};
use storlab::workload::{Dir, SyncMode};
use support::free_port;

/// A running ganesha and what it exports.
struct Server {
    host: String,
    port: u16,
    export: String,
    /// The exported directory (the backing files).
    dir: PathBuf,
    base: PathBuf,
    ganesha: Option<Proc>,
    rpcbind: Option<Proc>,
    netns: Option<(PathBuf, Netns)>,
}

impl Server {
    fn target(&self, file: &str, version: u8, minor: u8) -> Target {
        Target::Nfs(NfsTarget {
            host: self.host.clone(),
            port: self.port,
            mount_port: None,
            export: self.export.clone(),
            path: file.into(),
            version,
            minor,
            nconnect: 1,
            file_sync: false,
        })
    }

    /// Kill ganesha (SIGKILL) now.
    fn kill(&mut self) {
        if let Some(g) = self.ganesha.take() {
            assert!(g.kill(), "ganesha pid {} did not die", g.pid);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(g) = self.ganesha.take() {
            g.stop(Duration::from_secs(10));
        }
        if let Some(r) = self.rpcbind.take() {
            r.stop(Duration::from_secs(5));
        }
        if let Some((ip, ns)) = self.netns.take()
            && let Err(e) = netns::destroy(&ip, &ns)
        {
            eprintln!("cannot remove namespace {}: {e}", ns.name);
        }
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn need_ganesha() -> PathBuf {
    let fsal = Path::new("/usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so");
    match tools::which("ganesha.nfsd") {
        Some(p) if fsal.exists() || !cfg!(target_arch = "x86_64") => p,
        _ => panic!(
            "nfs-ganesha (ganesha.nfsd) and nfs-ganesha-vfs are needed for the NFS tests: \
             run ./setup.sh"
        ),
    }
}

fn temp_base(under: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let base = Path::new(under).join(format!("storlab-nfs-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("export")).unwrap();
    base
}

/// Ready when an RPC NULL call on NFS `vers` is answered.
fn null_probe(host: &str, port: u16, vers: u32) -> Result<(), String> {
    let mut c = Conn::connect(host, port, Duration::from_secs(1)).map_err(|e| e.to_string())?;
    c.call(NFS_PROG, vers, 0, Duration::from_secs(2), |_| {})
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// ganesha serving NFSv4 only on 127.0.0.1 in the root namespace, exporting
/// a fresh directory under `under` as /export.
fn start_v4(under: &str) -> Server {
    start_v4_with(under, "")
}

/// [`start_v4`] with `nfsv4` added to ganesha's NFSV4 block.
fn start_v4_with(under: &str, nfsv4: &str) -> Server {
    let bin = need_ganesha();
    let base = temp_base(under);
    let (port, mport) = (free_port(), free_port());
    let conf = base.join("ganesha.conf");
    std::fs::write(
        &conf,
        format!(
            r#"NFS_CORE_PARAM {{
NFS_Port = {port}; MNT_Port = {mport}; Protocols = 4; Bind_Addr = 127.0.0.1;
Enable_NLM = false; Enable_RQUOTA = false;
}}
NFSV4 {{ Graceless = true; RecoveryBackend = fs; RecoveryRoot = "{b}/recovery"; {nfsv4} }}
EXPORT {{
Export_Id = 1; Path = "{b}/export"; Pseudo = "/export"; Access_Type = RW;
Squash = No_Root_Squash; Protocols = 4; Transports = TCP; SecType = sys;
FSAL {{ Name = VFS; }}
}}
"#,
            b = base.display()
        ),
    )
    .unwrap();
    let s = |p: &str| base.join(p).display().to_string();
    let args = [
        "-F".to_string(),
        "-f".into(),
        conf.display().to_string(),
        "-L".into(),
        s("ganesha.log"),
        "-p".into(),
        s("ganesha.pid"),
        "-N".into(),
        "NIV_EVENT".into(),
    ];
    let proc = process::spawn(&bin, &args, &base.join("ganesha.out")).unwrap();
    let server = Server {
        host: "127.0.0.1".into(),
        port,
        export: "/export".into(),
        dir: base.join("export"),
        base: base.clone(),
        ganesha: Some(proc.clone()),
        rpcbind: None,
        netns: None,
    };
    if let Err(e) = ready::wait("ganesha", &proc, || null_probe("127.0.0.1", port, 4)) {
        panic!("{e}\n{}", process::tail(&base.join("ganesha.log"), 20));
    }
    server
}

/// The lab's storage host: a namespace, rpcbind, ganesha serving v3 and v4
/// of a fresh directory as [`ganesha::EXPORT`].
fn start_lab(under: &str) -> Server {
    need_ganesha();
    let tools = Tools::find().unwrap_or_else(|e| panic!("{e}: run ./setup.sh"));
    let base = temp_base(under);
    let ns = netns::create(&tools.ip).unwrap();
    let mut server = Server {
        host: ns.ns_addr.to_string(),
        port: 2049,
        export: ganesha::EXPORT.into(),
        dir: base.join("export"),
        base: base.clone(),
        ganesha: None,
        rpcbind: None,
        netns: Some((tools.ip.clone(), ns.clone())),
    };
    let anchor = rpcbind::start(&tools, &ns, &base).unwrap();
    server.rpcbind = Some(anchor.clone());
    rpcbind::wait_ready(&tools, &ns, &anchor).unwrap();
    let g = ganesha::start(
        &tools,
        &anchor,
        storlab::lab::NetMode::Netns,
        &server.dir,
        2049,
        20048,
        &base,
    )
    .unwrap();
    server.ganesha = Some(g.clone());
    let host = server.host.clone();
    if let Err(e) = ready::wait("ganesha", &g, || {
        null_probe(&host, 2049, 3)?;
        v3::mount_port(&host).map(|_| ())
    }) {
        panic!("{e}");
    }
    server
}

fn opts(write: bool, depth: u32) -> OpenOptions {
    OpenOptions {
        direct: false,
        sync: None,
        write,
        depth,
        size_needed: 0,
        ..OpenOptions::default()
    }
}

/// The test pattern's byte at file offset `o`.
fn pattern(o: u64) -> u8 {
    (o.wrapping_mul(2_654_435_761) >> 11) as u8 ^ (o >> 12) as u8
}

/// `b` with 16 buffers of 3 MiB (the largest request).
fn lane(b: NfsBackend) -> Lane<NfsBackend> {
    Lane::new(Box::new(b), BufferPool::new(16, 3 << 20)).unwrap()
}

/// Run `reqs` (dir, offset, len) at queue depth `qd`, filling writes with the
/// pattern and checking reads against it.
fn run(b: &mut Lane<NfsBackend>, reqs: &[(Dir, u64, u32)], qd: usize) {
    let ios: Vec<Io> = reqs
        .iter()
        .map(|&(dir, offset, len)| Io::new(dir, offset, len))
        .collect();
    let fill = |i: usize, buf: &mut [u8]| {
        let Io { dir, offset, .. } = ios[i];
        for (j, byte) in buf.iter_mut().enumerate() {
            *byte = if dir == Dir::Write {
                pattern(offset + j as u64)
            } else {
                0xEE
            };
        }
    };
    let done = |i: usize, r: Result<u32, i32>, buf: &[u8]| {
        let Io {
            dir, offset, len, ..
        } = ios[i];
        assert_eq!(r, Ok(len), "{dir:?} at {offset} len {len}");
        if dir == Dir::Read {
            for (j, &byte) in buf.iter().enumerate() {
                let o = offset + j as u64;
                assert_eq!(byte, pattern(o), "byte at {o} read back");
            }
        }
        Ok(())
    };
    b.run(&ios, qd, Duration::from_secs(30), fill, done)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Check the backing file on the server's disk holds the pattern in `range`.
fn check_backing(path: &Path, range: std::ops::Range<u64>) {
    let data = std::fs::read(path).unwrap();
    assert!(
        data.len() as u64 >= range.end,
        "{} too short",
        path.display()
    );
    for o in range {
        assert_eq!(data[o as usize], pattern(o), "backing byte at {o}");
    }
}

/// A deterministic shuffle of 0..n.
fn shuffled(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// Everything the NFS tests check, against `s` with NFS `version`.`minor`.
fn scenario(s: &mut Server, version: u8, minor: u8) {
    const MIB: u64 = 1 << 20;
    let file = "data.img";
    let t = s.target(file, version, minor);
    let url = t.to_string();
    let backing = s.dir.join(file);

    // A read-only run does not create a missing file.
    let e = NfsBackend::open(std::slice::from_ref(&t), &opts(false, 16))
        .err()
        .unwrap();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&url) && msg.contains("does not exist"),
        "{msg}"
    );

    // Write 4 MiB of 4 KiB blocks in random order at QD 16 (UNSTABLE, COMMIT at drop).
    let b = NfsBackend::open(std::slice::from_ref(&t), &opts(true, 16)).unwrap();
    assert_eq!(b.name(), "nfs");
    assert_eq!(b.size(0), 0);
    let v = match minor {
        0 => format!("NFSv{version} "),
        m => format!("NFSv{version}.{m} "),
    };
    assert!(b.features().contains(&v), "{}", b.features());
    println!("{}", b.features());
    let mut b = lane(b);
    let writes: Vec<_> = shuffled(1024)
        .into_iter()
        .map(|i| (Dir::Write, i * 4096, 4096))
        .collect();
    run(&mut b, &writes, 16);
    // One 3 MiB write: split into RPCs of at most 1 MiB.
    run(&mut b, &[(Dir::Write, 4 * MIB, 3 * MIB as u32)], 1);
    drop(b);
    check_backing(&backing, 0..7 * MIB);

    // Read it back at QD 16 (16 KiB reads, then one 3 MiB read).
    let mut o = opts(false, 16);
    o.size_needed = 7 * MIB;
    let b = NfsBackend::open(std::slice::from_ref(&t), &o).unwrap();
    assert_eq!(b.size(0), 7 * MIB);
    let mut b = lane(b);
    let reads: Vec<_> = shuffled(256)
        .into_iter()
        .map(|i| (Dir::Read, i * 16384, 16384))
        .collect();
    run(&mut b, &reads, 16);
    run(&mut b, &[(Dir::Read, 4 * MIB, 3 * MIB as u32)], 1);
    // Reading past the end is short: 4 KiB of 8 KiB.
    b.queue(0, 0, Dir::Read, 7 * MIB - 4096, 8192).unwrap();
    b.commit().unwrap();
    let mut out = Vec::new();
    b.reap(Wait::at_least(1), &mut out).unwrap();
    assert_eq!(out[0].result, Ok(4096));
    drop(b);

    // FILE_SYNC writes: complete only when stable; visible on the backing
    // file before the backend is dropped.
    let mut o = opts(true, 16);
    o.sync = Some(SyncMode::Dsync);
    let b = NfsBackend::open(std::slice::from_ref(&t), &o).unwrap();
    assert!(b.features().contains("FILE_SYNC"), "{}", b.features());
    let mut b = lane(b);
    std::fs::write(&backing, vec![0u8; 7 * MIB as usize]).unwrap();
    let writes: Vec<_> = (0..64).map(|i| (Dir::Write, i * 8192, 8192)).collect();
    run(&mut b, &writes, 16);
    check_backing(&backing, 0..512 * 1024);
    assert!(!b.backend().has_uncommitted_writes());
    drop(b);

    // The target's `stable=file` (ESXi's datastore writes): FILE_SYNC
    // though the workload asks for no sync.
    let synced = Target::parse(&format!("{t}&stable=file")).unwrap();
    let b = NfsBackend::open(std::slice::from_ref(&synced), &opts(true, 16)).unwrap();
    assert!(
        b.features()
            .contains("FILE_SYNC writes (the target's stable=file)"),
        "{}",
        b.features()
    );
    let mut b = lane(b);
    std::fs::write(&backing, vec![0u8; 7 * MIB as usize]).unwrap();
    run(&mut b, &writes, 16);
    check_backing(&backing, 0..512 * 1024);
    assert!(!b.backend().has_uncommitted_writes());
    drop(b);

    // The file is smaller than the run needs: both sizes named.
    let mut o = opts(false, 4);
    o.size_needed = 8 * MIB;
    let msg = NfsBackend::open(std::slice::from_ref(&t), &o)
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with(&url)
            && msg.contains(&(7 * MIB).to_string())
            && msg.contains(&(8 * MIB).to_string()),
        "{msg}"
    );

    // A wrong export names the URL and the export.
    let Target::Nfs(NfsTarget { export, .. }) = &t else {
        unreachable!()
    };
    let mut wrong = t.clone();
    if let Target::Nfs(n) = &mut wrong {
        n.export = "/nosuchexport".into();
    }
    let msg = NfsBackend::open(std::slice::from_ref(&wrong), &opts(false, 4))
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with(&wrong.to_string()) && msg.contains("export /nosuchexport not found"),
        "{msg}"
    );
    assert_ne!(export, "/nosuchexport");

    // Nothing listens: connection refused, naming the URL.
    let mut refused = t.clone();
    if let Target::Nfs(n) = &mut refused {
        n.port = free_port();
    }
    let msg = NfsBackend::open(std::slice::from_ref(&refused), &opts(false, 4))
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with(&refused.to_string()) && msg.contains("connection refused"),
        "{msg}"
    );

    // The server dies mid-run: reap fails (the backend is broken).
    let mut b = lane(NfsBackend::open(std::slice::from_ref(&t), &opts(false, 16)).unwrap());
    s.kill();
    for slot in 0..16u32 {
        b.queue(slot, 0, Dir::Read, slot as u64 * 4096, 4096)
            .unwrap();
    }
    let mut out = Vec::new();
    let all = Wait::at_least(16).or_after(Duration::from_secs(30));
    let err = match b.commit() {
        Err(e) => e,
        Ok(()) => b.reap(all, &mut out).err().unwrap(),
    };
    let msg = err.to_string();
    assert!(msg.starts_with(&url), "{msg}");
    assert!(out.is_empty());
    drop(b);
}

/// 4 KiB random reads at QD 32 for `secs` seconds: IOPS.
fn randread_iops(t: &Target, size: u64, secs: u64) -> f64 {
    let mut o = opts(false, 32);
    o.size_needed = size;
    let b = NfsBackend::open(std::slice::from_ref(t), &o).unwrap();
    let mut b = Lane::new(Box::new(b), BufferPool::new(32, 4096)).unwrap();
    let blocks = size / 4096;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |b: &mut Lane<NfsBackend>, slot: u32| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.queue(slot, 0, Dir::Read, (x % blocks) * 4096, 4096)
            .unwrap();
    };
    for slot in 0..32 {
        next(&mut b, slot);
    }
    b.commit().unwrap();
    let mut out = Vec::with_capacity(32);
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut ios = 0u64;
    let one = Wait::at_least(1).or_after(Duration::from_secs(10));
    while Instant::now() < end {
        out.clear();
        b.reap(one, &mut out).unwrap();
        for c in &out {
            assert_eq!(c.result, Ok(4096));
            next(&mut b, c.slot);
        }
        ios += out.len() as u64;
        b.commit().unwrap();
    }
    let iops = ios as f64 / start.elapsed().as_secs_f64();
    out.clear();
    let all = Wait::at_least(32).or_after(Duration::from_secs(10));
    while b.reap(all, &mut out).unwrap() > 0 {}
    iops
}

fn fill(path: &Path, size: u64) {
    let chunk: Vec<u8> = (0..1u64 << 20).map(pattern).collect();
    let mut data = Vec::with_capacity(size as usize);
    while (data.len() as u64) < size {
        data.extend_from_slice(&chunk);
    }
    std::fs::write(path, &data).unwrap();
}

/// Measure: `cargo test --release --lib nfs::tests::bench -- --ignored --nocapture`.
/// The export lives in /dev/shm, so the server's storage costs nothing.
#[test]
#[ignore = "a measurement (about a minute), not a check"]
fn bench_4k_randread_qd32() {
    const SIZE: u64 = 256 << 20;
    let secs = 10;
    let s4 = start_v4("/dev/shm");
    fill(&s4.dir.join("bench.img"), SIZE);
    let v4_lo = randread_iops(&s4.target("bench.img", 4, 0), SIZE, secs);
    drop(s4);
    let lab = start_lab("/dev/shm");
    fill(&lab.dir.join("bench.img"), SIZE);
    let v3_ns = randread_iops(&lab.target("bench.img", 3, 0), SIZE, secs);
    let v4_ns = randread_iops(&lab.target("bench.img", 4, 0), SIZE, secs);
    drop(lab);
    println!("4k randread QD32, {secs} s each, export on /dev/shm:");
    println!("  NFSv4 over loopback (127.0.0.1):       {v4_lo:>9.0} IOPS");
    println!("  NFSv3 over the lab's veth (netns):      {v3_ns:>9.0} IOPS");
    println!("  NFSv4 over the lab's veth (netns):      {v4_ns:>9.0} IOPS");
}

#[test]
fn nfs4_against_ganesha() {
    let mut s = start_v4("/tmp");
    scenario(&mut s, 4, 0);
}

/// NFSv4.1: the scenario of 4.0 and 3, and a session of one slot (the
/// queue depth) carrying a 3 MiB request's three RPCs one after another.
#[test]
fn nfs41_against_ganesha() {
    const MIB: u64 = 1 << 20;
    let mut s = start_v4("/tmp");
    let t = s.target("one-slot.img", 4, 1);
    let mut b = lane(NfsBackend::open(std::slice::from_ref(&t), &opts(true, 1)).unwrap());
    let features = b.backend().features();
    assert!(
        features.contains("NFSv4.1 (session of 1 slots)"),
        "{features}"
    );
    let one = [(Dir::Write, 0, 3 * MIB as u32)];
    run(&mut b, &one, 1);
    drop(b);
    check_backing(&s.dir.join("one-slot.img"), 0..3 * MIB);
    let mut b = lane(NfsBackend::open(std::slice::from_ref(&t), &opts(false, 1)).unwrap());
    run(&mut b, &[(Dir::Read, 0, 3 * MIB as u32)], 1);
    drop(b);
    scenario(&mut s, 4, 1);
}

/// A server that offers NFSv4.0 only: one line naming the server and 4.1.
#[test]
fn nfs41_refused_by_a_server_without_it() {
    let s = start_v4_with("/tmp", "Minor_Versions = 0;");
    let t = s.target("data.img", 4, 1);
    let msg = NfsBackend::open(std::slice::from_ref(&t), &opts(true, 4))
        .err()
        .unwrap()
        .to_string();
    let server = format!("server 127.0.0.1:{} does not offer NFSv4.1", s.port);
    assert!(msg.contains(&server) && !msg.contains('\n'), "{msg}");
    assert!(msg.contains("NFS4ERR_MINOR_VERS_MISMATCH"), "{msg}");
    // 4.0 on the same server works.
    let t = s.target("data.img", 4, 0);
    drop(NfsBackend::open(std::slice::from_ref(&t), &opts(true, 4)).unwrap());
}

#[test]
fn nfs3_against_ganesha() {
    let mut s = start_lab("/tmp");
    scenario(&mut s, 3, 0);
}

/// The saved verify map in `state` whose name holds `part` (one per target).
fn map_named(state: &Path, part: &str) -> PathBuf {
    std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("no map named *{part}* in {}", state.display()))
}

/// One file over NFSv3, 4.0 and 4.1 is one storage identity (its fileid
/// and handle, as ganesha gives them), and verify mode follows it: a
/// verified write pass over one version and a verified read pass over the
/// other report zero bad blocks, both ways round, and a block copied over
/// another offset of the file is still reported as misdirected, through a
/// map that named the file by the other version's URL.
#[test]
fn verified_runs_over_nfsv3_and_v41_of_one_file_share_its_identity() {
    let s = start_lab("/tmp");
    const SIZE: u64 = 1 << 20;
    // The test's own files, so its runs pass --allow-overwrite.
    for f in ["shared.img", "other.img"] {
        let file = std::fs::File::create(s.dir.join(f)).unwrap();
        file.set_len(SIZE).unwrap();
    }
    let id = |file: &str, v: u8, m: u8| {
        NfsBackend::open(&[s.target(file, v, m)], &opts(false, 1))
            .unwrap()
            .identity(0)
            .unwrap_or_else(|| panic!("{file} over v{v}.{m} has no identity"))
    };
    let v3 = id("shared.img", 3, 0);
    assert!(v3.starts_with("nfs fileid "), "{v3}");
    assert_eq!(v3, id("shared.img", 4, 0));
    assert_eq!(v3, id("shared.img", 4, 1));
    assert_ne!(v3, id("other.img", 4, 1));

    let state = s.base.join("verify-state");
    let storlab = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_storlab"))
            .env("STORLAB_VERIFY_DIR", &state)
            .args(args)
            .output()
            .unwrap()
    };
    let url3 = s.target("shared.img", 3, 0).to_string();
    let url41 = s.target("shared.img", 4, 1).to_string();
    let size = SIZE.to_string();
    let pass = |url: &str, rw: &str| {
        let o = storlab(&[
            "run",
            "--target",
            url,
            "--rw",
            rw,
            "--bs",
            "64k",
            "--size",
            &size,
            "--io_size",
            &size,
            "--runtime",
            "60",
            "--verify",
            "--no-db",
            "-q",
            "--allow-overwrite",
        ]);
        let t = support::text(&o);
        assert!(o.status.success(), "{rw} over {url}: {t}");
        assert!(!t.contains("misdirected"), "{rw} over {url}: {t}");
    };
    pass(&url3, "write");
    pass(&url41, "read");
    pass(&url41, "write");
    pass(&url3, "read");

    // A block lands at the wrong offset: the one written for 4096 at 8192.
    let backing = s.dir.join("shared.img");
    let mut data = std::fs::read(&backing).unwrap();
    data.copy_within(4096..4608, 8192);
    std::fs::write(&backing, &data).unwrap();
    let map41 = map_named(&state, "version_4_1");
    let o = storlab(&["verify", &url3, "--map", &map41.display().to_string()]);
    let t = support::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(": 1 bad"), "{t}");
    assert!(
        t.contains("misdirected block") && t.contains("at offset 8192"),
        "{t}"
    );
}
