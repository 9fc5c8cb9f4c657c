//! The media server as the lab runs it: `storlab media-serve` started by
//! `MediaServer`, stopped by SIGTERM, killed by SIGKILL or stopped by SIGSTOP
//! with `cleanup` leaving nothing mounted, a start that fails saying why, the
//! ranges written through the mount taken at a reset and restored (or the
//! whole store when the server cannot tell), the medium's counters it
//! publishes (busy under a saturating load, idle without one, cleared by a
//! reset), and nfs-ganesha exporting the FUSE mount to storlab's own NFS client. Needs
//! root, /dev/fuse and ./setup.sh's packages (nfs-ganesha).

mod support;

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use storlab::media::dirty::Written;
use storlab::media::fuse::mount::mounted;
use storlab::media::serve::{MediaServer, cleanup};
use storlab::media::stats::{self, MediaStats};
use storlab::prepare;
use support::media::Dirs;
use support::{alive, free_port, text};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_storlab"))
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a PID this test started.
    unsafe { libc::kill(pid as i32, sig) };
}

#[test]
fn sigterm_unmounts_and_the_server_exits() {
    let d = Dirs::new("term");
    let s = d.start("ram");
    assert_eq!(mounted(&d.mnt()).len(), 1);
    assert_eq!(
        fs::read(d.mnt().join("disk.img")).unwrap(),
        fs::read(d.back().join("disk.img")).unwrap()
    );
    s.stop().unwrap();
    assert!(!alive(s.pid() as i32));
    assert!(mounted(&d.mnt()).is_empty());
    let log = fs::read_to_string(d.log()).unwrap();
    assert!(log.contains("signal 15, unmounting"), "{log}");
}

#[test]
fn a_reset_is_acknowledged_and_the_server_keeps_serving() {
    let d = Dirs::new("reset");
    let s = d.start("array-15k");
    for _ in 0..2 {
        s.reset().unwrap();
    }
    assert_eq!(
        fs::read(d.mnt().join("disk.img")).unwrap(),
        fs::read(d.back().join("disk.img")).unwrap(),
        "still serving after its resets"
    );
    s.stop().unwrap();
    assert!(mounted(&d.mnt()).is_empty());
}

#[test]
fn a_killed_server_leaves_a_dead_mount_that_cleanup_removes() {
    let d = Dirs::new("kill");
    let s = d.start("fixed:100");
    let f = fs::File::open(d.mnt().join("disk.img")).unwrap();
    signal(s.pid(), libc::SIGKILL);
    assert!(s.proc.wait_gone(Duration::from_secs(5)));
    assert_eq!(mounted(&d.mnt()).len(), 1, "the mount outlives its server");
    let e = fs::read(d.mnt().join("disk.img")).unwrap_err();
    assert!(
        matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)),
        "{e}"
    );
    cleanup(&d.mnt()).unwrap();
    assert!(mounted(&d.mnt()).is_empty());
    drop(f);
    cleanup(&d.mnt()).expect("cleanup is idempotent");
    fs::write(d.mnt().join("plain"), b"x").expect("an ordinary directory again");
}

#[test]
fn cleanup_aborts_a_stopped_server_and_its_waiting_io_fails() {
    let d = Dirs::new("stop");
    let s = d.start("fixed:100");
    signal(s.pid(), libc::SIGSTOP);
    let path = d.mnt().join("disk.img");
    let reader = std::thread::spawn(move || fs::read(path).map(|v| v.len()));
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    cleanup(&d.mnt()).unwrap();
    let r = reader.join().unwrap();
    assert!(
        r.is_err(),
        "a read from a stopped server cannot succeed: {r:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(mounted(&d.mnt()).is_empty());
    signal(s.pid(), libc::SIGCONT);
    s.stop().unwrap();
    assert!(!alive(s.pid() as i32));
}

#[test]
fn a_start_that_fails_says_why_and_leaves_nothing() {
    let d = Dirs::new("fail");
    let start = |store: &Path, mnt: &Path, media: &str| {
        MediaServer::start_with(bin(), store, mnt, media, None, None, &d.log()).unwrap_err()
    };
    let missing = d.0.join("no-such-dir");
    let e = start(&missing.join("disk.img"), &d.mnt(), "ram");
    assert!(
        e.contains("exited") && e.contains("--backing") && e.contains("not a directory"),
        "{e}"
    );
    assert!(mounted(&d.mnt()).is_empty());
    let e = start(&d.store(), &d.mnt(), "ssd-typo");
    assert!(e.contains("\"ssd-typo\"") && e.contains("allowed"), "{e}");
    // A mount point inside the backing directory would serve itself.
    fs::create_dir(d.back().join("inner")).unwrap();
    let e = start(&d.store(), &d.back().join("inner"), "ram");
    assert!(e.contains("one holds the other"), "{e}");
    // The same mount point twice: the second server refuses and says so.
    let s = d.start("ram");
    let e = start(&d.store(), &d.mnt(), "ram");
    assert!(e.contains("already has storlab's media file system"), "{e}");
    assert_eq!(mounted(&d.mnt()).len(), 1, "the first server's mount stays");
    s.stop().unwrap();
}

/// Replace the Dirs' store with one storlab prepares (its marker beside
/// it, so the restores accept it) of `mib` MiB; its content.
fn prepared_store(d: &Dirs, mib: u64) -> (PathBuf, Vec<u8>) {
    let path = d.back().join("disk.img");
    fs::remove_file(&path).unwrap();
    prepare::prepare(&prepare::PrepareRequest {
        path: &path,
        size: mib << 20,
        content: storlab::workload::Content::Random,
        seed: 7,
        writes: true,
        allow_foreign_writes: false,
    })
    .unwrap();
    let initial = fs::read(&path).unwrap();
    (path, initial)
}

/// `n` offsets in `[0, size - len)`, from a fixed xorshift.
fn random_offsets(n: usize, size: u64, len: u64) -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (size - len)
        })
        .collect()
}

#[test]
fn only_the_ranges_written_through_the_mount_are_restored_and_every_byte_comes_back() {
    let d = Dirs::new("dirty");
    let (path, initial) = prepared_store(&d, 64);
    let size = initial.len() as u64;
    let s = d.start("fixed:20");
    let f = fs::OpenOptions::new()
        .write(true)
        .open(d.mnt().join("disk.img"))
        .unwrap();
    let len = 12288;
    let offsets = random_offsets(24, size, len);
    for &o in &offsets {
        f.write_all_at(&vec![0xA5; len as usize], o).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    assert!(
        fs::read(&path).unwrap() != initial,
        "the writes reached the store"
    );
    // A plain reset (each target's start) keeps the map for the restore.
    s.reset().unwrap();
    let ranges = match s.reset_taking_written().unwrap() {
        Written::Ranges(r) => r,
        Written::Unknown(why) => panic!("a direct mount cannot tell: {why}"),
    };
    for &o in &offsets {
        assert!(
            ranges.iter().any(|&(f, t)| f <= o && o + len <= t),
            "write at {o} not in {ranges:?}"
        );
    }
    let rewritten = prepare::restore_ranges(&path, &ranges).unwrap();
    // A write of 12 KiB touches at most two of the map's 64 KiB chunks.
    let chunk = storlab::media::dirty::CHUNK;
    assert!(
        chunk == 64 << 10 && rewritten <= offsets.len() as u64 * 2 * chunk,
        "{rewritten} bytes rewritten for {} writes of {len}",
        offsets.len()
    );
    assert!(
        fs::read(&path).unwrap() == initial,
        "every byte of the store back"
    );
    assert!(
        fs::read(d.mnt().join("disk.img")).unwrap() == initial,
        "and so through the mount"
    );
    // Taken: the next take has nothing, and its restore writes nothing.
    assert_eq!(s.reset_taking_written().unwrap(), Written::Ranges(vec![]));
    assert_eq!(prepare::restore_ranges(&path, &[]).unwrap(), 0);
    s.stop().unwrap();
}

/// A preset file in `d` with `slow-disk`: one 7.2k-rpm spindle, no caches.
fn slow_disk(d: &Dirs) -> PathBuf {
    let f = d.0.join("slow.toml");
    fs::write(
        &f,
        "[slow-disk]\ndescription = \"one 7.2k disk, nothing cached\"\nkind = \"spindle\"\n\
         devices = 1\nstripe_kb = 64\nseek_ms = 8\nrpm = 7200\ntransfer_mb_s = 100\n\
         cache_us = 50\nread_cache_mb = 0\nwrite_cache_mb = 0\nnvram = false\n",
    )
    .unwrap();
    f
}

/// The server's first statistics written after now (CLOCK_MONOTONIC).
fn fresh_stats(s: &MediaServer) -> MediaStats {
    let now = storlab::media::fuse::now_ns();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let st = s.stats().unwrap();
        if st.at_ns > now {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "no statistics after {now}: {st:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_published_counters_say_how_busy_the_devices_were_and_a_reset_clears_them() {
    let d = Dirs::new("stats");
    let file = slow_disk(&d);
    let s = d.start_from("slow-disk", Some(&file));
    let first = s.stats().expect("written before the server was ready");
    assert_eq!((first.medium.as_str(), first.resets), ("slow-disk", 0));
    // Idle: the devices did nothing.
    std::thread::sleep(Duration::from_millis(500));
    let idle = fresh_stats(&s).since(&first).unwrap();
    assert!(idle.elapsed_ns >= 400_000_000, "{idle:?}");
    let busy = idle.busy(stats::DEVICES).unwrap();
    assert!(busy < 0.05, "idle, the devices {busy} busy: {idle:?}");

    // Four readers of random 4 KiB blocks keep one disk busy all the time.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..4u64)
        .map(|k| {
            let (path, stop) = (d.mnt().join("disk.img"), stop.clone());
            std::thread::spawn(move || {
                let f = fs::File::open(path).unwrap();
                let mut buf = vec![0u8; 4096];
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ k;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    f.read_exact_at(&mut buf, (x % 4096) * 4096).unwrap();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = fresh_stats(&s);
    std::thread::sleep(Duration::from_millis(1500));
    let after = fresh_stats(&s);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let load = after.since(&before).unwrap();
    let busy = load.busy(stats::DEVICES).unwrap();
    eprintln!(
        "idle: devices {:.3} busy; loaded: {busy:.3} busy, {} reads in {:.2} s",
        idle.busy(stats::DEVICES).unwrap(),
        load.reads,
        load.elapsed_ns as f64 / 1e9
    );
    assert!(
        busy > 0.8,
        "saturated, the devices only {busy} busy: {load:?}"
    );
    assert_eq!(load.busiest().unwrap().name, stats::DEVICES);
    assert!(load.reads > 0 && load.read_hits == 0, "{load:?}");
    assert_eq!(load.read_bytes, 4096 * load.reads);
    // The utilization law: the reads in the window times a random read's
    // mean (8 ms seek, half a turn at 7200 rpm, 4 KiB at 100 MB/s).
    let service_ns = 8e6 + 60e9 / 7200.0 / 2.0 + 4096.0 / 0.1;
    let law = load.reads as f64 * service_ns / load.elapsed_ns as f64;
    assert!(
        (busy / law - 1.0).abs() < 0.15,
        "{busy} busy, {} reads x {service_ns} ns over {} ns = {law}",
        load.reads,
        load.elapsed_ns
    );

    // A reset clears the counters and says so in the reset count.
    s.reset().unwrap();
    let cleared = s.stats().unwrap();
    assert_eq!(cleared.resets, 1);
    let c = &cleared.counters;
    assert_eq!((c.reads, c.read_bytes, c.writes), (0, 0, 0), "{cleared:?}");
    assert!(c.stations.iter().all(|st| st.busy_ns == 0), "{cleared:?}");
    let e = cleared.since(&after).unwrap_err();
    assert!(e.contains("reset its medium between"), "{e}");
    s.stop().unwrap();
    assert!(
        !d.log().with_extension("stats").exists(),
        "a server that exits removes its statistics"
    );
    // A medium without a model publishes none, and says so.
    let fixed = d.start("fixed:50");
    let e = fixed.stats().unwrap_err();
    assert!(e.contains("publishes no statistics"), "{e}");
    fixed.stop().unwrap();
}

/// Stops a process by PID when dropped.
struct Stop(storlab::process::Proc);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.stop(Duration::from_secs(5));
    }
}

#[test]
fn a_server_that_cannot_tell_what_was_written_leaves_the_whole_restore() {
    let d = Dirs::new("nodirty");
    let (path, initial) = prepared_store(&d, 16);
    // ram: passthrough, the kernel writes the backing file unseen.
    let s = d.start("ram");
    fs::OpenOptions::new()
        .write(true)
        .open(d.mnt().join("disk.img"))
        .unwrap()
        .write_all_at(b"scribble", 5 << 20)
        .unwrap();
    match s.reset_taking_written().unwrap() {
        Written::Unknown(why) => assert!(why.contains("passthrough"), "{why}"),
        w => panic!("passthrough reported {w:?}"),
    }
    s.stop().unwrap();
    assert_eq!(prepare::restore(&path).unwrap(), initial.len() as u64);
    assert!(fs::read(&path).unwrap() == initial);
    // A server older than the map resets but leaves the request unanswered.
    let log = d.0.join("old.log");
    let script = format!(
        "trap 'echo $$ > {}' USR1; while :; do sleep 0.05; done",
        log.with_extension("ready").display()
    );
    let old = Stop(
        storlab::process::spawn(Path::new("/bin/bash"), &["-c".into(), script], &log).unwrap(),
    );
    std::thread::sleep(Duration::from_millis(200)); // its trap is set
    let server = MediaServer::from_proc(old.0.clone(), &d.mnt());
    match server.reset_taking_written().unwrap() {
        Written::Unknown(why) => assert!(why.contains("older storlab"), "{why}"),
        w => panic!("an old server reported {w:?}"),
    }
    assert!(
        !log.with_extension("dirty").exists(),
        "the request is removed"
    );
}

/// nfs-ganesha (NFSv4 only, on 127.0.0.1) exporting `dir` as /storlab,
/// killed by PID on drop.
struct Ganesha {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Ganesha {
    fn start(dir: &Path, state: &Path) -> Ganesha {
        let port = free_port();
        fs::create_dir_all(state).unwrap();
        let conf = state.join("ganesha.conf");
        fs::write(
            &conf,
            format!(
                "NFS_CORE_PARAM {{ NFS_Port = {port}; Bind_Addr = 127.0.0.1; Enable_NLM = false; \
                 Enable_RQUOTA = false; Protocols = 4; }}\n\
                 NFSV4 {{ Graceless = true; RecoveryBackend = fs; RecoveryRoot = \"{}\"; }}\n\
                 EXPORT {{ Export_Id = 1; Path = \"{}\"; Pseudo = \"/storlab\"; Access_Type = RW; \
                 Squash = No_Root_Squash; Protocols = 4; Transports = TCP; SecType = sys; \
                 FSAL {{ Name = VFS; }} }}\n",
                state.join("recovery").display(),
                dir.display()
            ),
        )
        .unwrap();
        let log = state.join("ganesha.log");
        let child = Command::new("ganesha.nfsd")
            .arg("-F")
            .arg("-f")
            .arg(&conf)
            .arg("-L")
            .arg(&log)
            .arg("-p")
            .arg(state.join("ganesha.pid"))
            .args(["-N", "NIV_EVENT"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ganesha.nfsd (Debian package nfs-ganesha; run ./setup.sh)");
        let g = Ganesha { child, port, log };
        let url = format!("nfs://127.0.0.1/storlab/?version=4&nfsport={port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let o = Command::new("nfs-ls").arg(&url).output().unwrap();
            if o.status.success() && String::from_utf8_lossy(&o.stdout).contains("disk.img") {
                return g;
            }
            assert!(
                Instant::now() < deadline,
                "ganesha did not export {} within 30 s: {}\n{}",
                dir.display(),
                text(&o),
                fs::read_to_string(&g.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn url(&self) -> String {
        format!("nfs://127.0.0.1:{}/storlab/disk.img?version=4", self.port)
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// storlab with its verify state in `state`.
fn storlab(state: &Path, args: &[&str]) -> std::process::Output {
    support::storlab()
        .env("STORLAB_VERIFY_DIR", state)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn ganesha_exports_the_mount_and_storlab_reads_and_writes_it_over_nfs() {
    for media in ["fixed:50", "ram"] {
        let d = Dirs::new(&format!("nfs-{}", media.replace(':', "")));
        let s = d.start(media);
        let before = fs::read(d.back().join("disk.img")).unwrap();
        {
            let g = Ganesha::start(&d.mnt(), &d.0.join("ganesha"));
            let vstate = d.0.join("verify");
            let url = g.url();
            let o = storlab(
                &vstate,
                &[
                    "run",
                    "--target",
                    &url,
                    "--rw",
                    "randrw",
                    "--bs",
                    "4k",
                    "--size",
                    "4m",
                    "--runtime",
                    "2",
                    "--verify",
                    "--no-db",
                    "-q",
                    "--allow-overwrite",
                ],
            );
            assert!(o.status.success(), "{media}: run over NFS: {}", text(&o));
            // The kernel forgets the FUSE inodes: ganesha's handles are
            // resolved again through LOOKUP of ".".
            fs::write("/proc/sys/vm/drop_caches", b"2").unwrap();
            let o = storlab(&vstate, &["verify", &url]);
            let t = text(&o);
            assert!(o.status.success() && t.contains(": 0 bad"), "{media}: {t}");
        }
        let after = fs::read(d.back().join("disk.img")).unwrap();
        assert_eq!(after.len(), before.len());
        assert_ne!(
            after, before,
            "{media}: the NFS writes reached the backing file"
        );
        s.stop().unwrap();
    }
}
