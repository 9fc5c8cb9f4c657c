//! The file system mounted for real (root, /dev/fuse), in this process: every
//! operation in each cache mode, backing errors passed through, NFS-style file
//! handles, the medium's times kept with many requests in flight, and a loop
//! device with direct I/O on the FUSE file, and the map of what was written.

use super::sys;
use super::{CacheMode, Options, Server};
use crate::media::{MediaOp, Medium, OpKind, Ram};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A backing directory and a mount point under /dev/shm, the file system
/// mounted, all removed on drop.
struct Mounted {
    server: Server,
    dir: PathBuf,
}

impl Mounted {
    fn new(tag: &str, medium: Arc<dyn Medium>, mode: Option<CacheMode>) -> Mounted {
        // Uncalibrated: these tests check that no reply comes before the
        // medium's time as the server sees it.
        let opts = Options {
            threads: 4,
            mode,
            calibrate: false,
            store: None,
        };
        Mounted::with(tag, medium, &opts)
    }
    fn with(tag: &str, medium: Arc<dyn Medium>, opts: &Options) -> Mounted {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(euid, 0, "the FUSE tests need root (mount(2), /dev/fuse)");
        let dir = PathBuf::from(format!(
            "/dev/shm/storlab-fusetest-{tag}-{}",
            std::process::id()
        ));
        let _ = super::cleanup(&dir.join("mnt"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("back")).unwrap();
        fs::create_dir_all(dir.join("mnt")).unwrap();
        if let Some(store) = &opts.store {
            File::create(dir.join("back").join(store)).unwrap();
        }
        let server = Server::mount(&dir.join("back"), &dir.join("mnt"), medium, opts)
            .unwrap_or_else(|e| panic!("mount: {e}"));
        Mounted { server, dir }
    }
    fn back(&self, name: &str) -> PathBuf {
        self.dir.join("back").join(name)
    }
    fn mnt(&self, name: &str) -> PathBuf {
        self.dir.join("mnt").join(name)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let r = self.server.unmount();
        let _ = fs::remove_dir_all(&self.dir);
        if !std::thread::panicking() {
            r.unwrap();
            assert!(super::mount::mounted(&self.dir.join("mnt")).is_empty());
        }
    }
}

/// A medium that records what it is asked and answers after `delay_ns`.
#[derive(Default)]
struct Recorder {
    ops: Mutex<Vec<MediaOp>>,
    delay_ns: u64,
}

impl Recorder {
    fn kinds(&self, kind: OpKind) -> Vec<MediaOp> {
        let ops = self.ops.lock().unwrap();
        ops.iter().filter(|o| o.kind == kind).copied().collect()
    }
}

impl Medium for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn schedule(&self, op: &MediaOp, now_ns: u64) -> u64 {
        self.ops.lock().unwrap().push(*op);
        now_ns + self.delay_ns
    }
}

/// A 4 KiB-aligned buffer for O_DIRECT.
fn aligned(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 4096];
    let off = v.as_ptr().align_offset(4096);
    (v, off)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Names, attributes, data and directories, as a local file system does them.
fn exercise(m: &Mounted) {
    let f = m.mnt("a");
    fs::write(&f, b"hello").unwrap();
    assert_eq!(
        fs::read(m.back("a")).unwrap(),
        b"hello",
        "reached the backing file"
    );
    assert_eq!(fs::read(&f).unwrap(), b"hello");
    fs::create_dir(m.mnt("d")).unwrap();
    fs::rename(&f, m.mnt("d/b")).unwrap();
    assert!(m.back("d/b").exists() && !m.back("a").exists());
    let mut names: Vec<String> = fs::read_dir(m.mnt("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["b"]);
    // Many entries: READDIR continues from the kernel's offset.
    for i in 0..300 {
        File::create(m.mnt(&format!("d/entry-with-a-long-name-{i:04}"))).unwrap();
    }
    assert_eq!(fs::read_dir(m.mnt("d")).unwrap().count(), 301);
    fs::set_permissions(m.mnt("d/b"), fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(fs::metadata(m.back("d/b")).unwrap().mode() & 0o777, 0o640);
    let file = OpenOptions::new().write(true).open(m.mnt("d/b")).unwrap();
    file.set_len(3).unwrap();
    let when = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    file.set_modified(when).unwrap();
    drop(file);
    let md = fs::metadata(m.mnt("d/b")).unwrap();
    assert_eq!((md.len(), md.modified().unwrap()), (3, when));
    assert_eq!(fs::read(m.back("d/b")).unwrap(), b"hel");
    // Sparse data: fallocate and SEEK_DATA/SEEK_HOLE reach the backing file.
    let big = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(m.mnt("sparse"))
        .unwrap();
    big.write_all_at(b"x", 1 << 20).unwrap();
    // SAFETY: fallocate on a descriptor we own.
    let r = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&big), 0, 0, 4096) };
    assert_eq!(r, 0, "fallocate: {}", std::io::Error::last_os_error());
    assert!(fs::metadata(m.back("sparse")).unwrap().blocks() >= 8);
    let back = File::open(m.back("sparse")).unwrap();
    for whence in [libc::SEEK_DATA, libc::SEEK_HOLE] {
        let at = |f: &File| sys::lseek(f.as_fd(), 8192, whence);
        assert_eq!(at(&big), at(&back), "lseek whence {whence}");
    }
    assert_eq!(sys::lseek(big.as_fd(), 8192, libc::SEEK_DATA), Ok(1 << 20));
    drop((big, back));
    // Errors are the backing file system's.
    let e = fs::read(m.mnt("missing")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    let e = fs::remove_dir(m.mnt("d")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY));
    fs::remove_dir_all(m.mnt("d")).unwrap();
    fs::remove_file(m.mnt("sparse")).unwrap();
    assert_eq!(fs::read_dir(m.back("")).unwrap().count(), 0);
    // statfs is the backing file system's.
    let st = sys::fstatvfs(File::open(m.mnt("")).unwrap().as_fd()).unwrap();
    let back = sys::fstatvfs(File::open(m.back("")).unwrap().as_fd()).unwrap();
    assert_eq!(st.f_blocks, back.f_blocks);
}

/// Buffered and O_DIRECT reads and writes at several sizes and offsets.
fn data_paths(m: &Mounted) {
    let len = 1 << 20;
    let content = pattern(len, 7);
    fs::write(m.back("disk.img"), &content).unwrap();
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.mnt("disk.img"))
        .unwrap();
    let (mut buf, off) = aligned(128 << 10);
    for (at, n) in [(0, 4096), (8192, 65536), (len - 131072, 131072)] {
        let b = &mut buf[off..off + n];
        assert_eq!(f.read_at(b, at as u64).unwrap(), n);
        assert_eq!(&b[..], &content[at..at + n], "O_DIRECT read at {at}");
    }
    let new = pattern(65536, 9);
    buf[off..off + 65536].copy_from_slice(&new);
    f.write_all_at(&buf[off..off + 65536], 4096).unwrap();
    drop(f);
    let back = fs::read(m.back("disk.img")).unwrap();
    assert_eq!(&back[4096..4096 + 65536], &new[..]);
    let mut g = File::open(m.mnt("disk.img")).unwrap();
    let mut all = Vec::new();
    g.read_to_end(&mut all).unwrap();
    assert_eq!(all, back, "buffered read of the whole file");
    g.seek(SeekFrom::Start(len as u64 - 10)).unwrap();
    assert_eq!(
        g.read(&mut [0u8; 64]).unwrap(),
        10,
        "a short read at the end"
    );
}

/// A RAM-backed mount in each cache mode in turn, named `PREFIX-MODE`; each
/// is unmounted before the next one mounts.
fn ram_mounts(prefix: &str) -> impl Iterator<Item = (CacheMode, Mounted)> + '_ {
    [
        CacheMode::Direct,
        CacheMode::PageCache,
        CacheMode::Passthrough,
    ]
    .into_iter()
    .map(move |mode| {
        let m = Mounted::new(
            &format!("{prefix}-{}", mode.name()),
            Arc::new(Ram),
            Some(mode),
        );
        (mode, m)
    })
}

#[test]
fn every_operation_works_in_every_cache_mode() {
    for (mode, m) in ram_mounts("ops") {
        exercise(&m);
        data_paths(&m);
        // The kernel sends RELEASE after close(2) has returned.
        let deadline = Instant::now() + Duration::from_secs(2);
        while m.server.open_handles() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            m.server.open_handles(),
            0,
            "{}: every handle released",
            mode.name()
        );
    }
}

/// One file open at once as the lab's servers and its loop device hold the
/// store: read-write, read-write with O_DIRECT, read-only; each sees the
/// others' writes. (In passthrough mode the kernel takes one backing file
/// per inode: every open shares it, or the second open fails with EIO.)
#[test]
fn one_file_open_many_times_at_once_in_every_cache_mode() {
    for (mode, m) in ram_mounts("many") {
        fs::write(m.back("f"), pattern(1 << 20, 1)).unwrap();
        let rw = OpenOptions::new().read(true).write(true).open(m.mnt("f"));
        let rw = rw.unwrap_or_else(|e| panic!("{}: open rw: {e}", mode.name()));
        let direct = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(m.mnt("f"))
            .unwrap_or_else(|e| panic!("{}: open rw O_DIRECT beside rw: {e}", mode.name()));
        let ro = File::open(m.mnt("f"))
            .unwrap_or_else(|e| panic!("{}: open ro beside them: {e}", mode.name()));
        let (mut buf, off) = aligned(4096);
        buf[off..off + 4096].copy_from_slice(&pattern(4096, 7));
        direct.write_all_at(&buf[off..off + 4096], 8192).unwrap();
        let mut got = vec![0u8; 4096];
        ro.read_exact_at(&mut got, 8192).unwrap();
        assert_eq!(
            got,
            pattern(4096, 7),
            "{}: direct write seen by ro",
            mode.name()
        );
        rw.write_all_at(&pattern(4096, 9), 0).unwrap();
        rw.sync_all().unwrap();
        direct.read_exact_at(&mut buf[off..off + 4096], 0).unwrap();
        assert_eq!(
            &buf[off..off + 4096],
            &pattern(4096, 9)[..],
            "{}: rw write seen by O_DIRECT",
            mode.name()
        );
        drop((rw, direct, ro));
        // The node's backing id went with its last open file.
        let deadline = Instant::now() + Duration::from_secs(2);
        while m.server.open_handles() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(m.server.open_handles(), 0, "{}", mode.name());
        File::open(m.mnt("f")).expect("opens again after every release");
    }
}

#[test]
fn ram_defaults_to_passthrough_and_a_device_to_direct_io() {
    let m = Mounted::new("default-ram", Arc::new(Ram), None);
    assert_eq!(
        m.server.mode(),
        CacheMode::Passthrough,
        "Linux 6.9+ offers passthrough"
    );
    let rec = Arc::new(Recorder::default());
    let d = Mounted::new("default-dev", rec.clone(), None);
    assert_eq!(d.server.mode(), CacheMode::Direct);
}

#[test]
fn the_medium_sees_every_data_operation_in_direct_mode_and_none_cached() {
    let len = 256 << 10;
    let runs = [
        (CacheMode::Direct, true),
        (CacheMode::PageCache, false),
        (CacheMode::Passthrough, false),
    ];
    for (mode, every) in runs {
        let rec = Arc::new(Recorder::default());
        let m = Mounted::new(&format!("seen-{}", mode.name()), rec.clone(), Some(mode));
        fs::write(m.back("disk.img"), pattern(len, 1)).unwrap();
        for _ in 0..2 {
            assert_eq!(fs::read(m.mnt("disk.img")).unwrap().len(), len);
        }
        let read: u64 = rec.kinds(OpKind::Read).iter().map(|o| o.len as u64).sum();
        match (mode, every) {
            (_, true) => assert!(read >= 2 * len as u64, "direct: {read} bytes read"),
            (CacheMode::PageCache, _) => assert!(
                read >= len as u64 && read < 2 * len as u64,
                "page cache: the second pass is cached ({read} bytes read)"
            ),
            _ => assert_eq!(read, 0, "passthrough: the kernel reads the backing file"),
        }
    }
}

#[test]
fn sync_writes_and_fsync_reach_the_medium_as_such() {
    let rec = Arc::new(Recorder::default());
    let m = Mounted::new("sync", rec.clone(), Some(CacheMode::Direct));
    fs::write(m.back("disk.img"), vec![0u8; 65536]).unwrap();
    let plain = OpenOptions::new()
        .write(true)
        .open(m.mnt("disk.img"))
        .unwrap();
    plain.write_all_at(&[1u8; 4096], 8192).unwrap();
    plain.sync_data().unwrap();
    let dsync = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(m.mnt("disk.img"))
        .unwrap();
    dsync.write_all_at(&[2u8; 4096], 16384).unwrap();
    let writes = rec.kinds(OpKind::Write);
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!(
        (writes[0].offset, writes[0].len, writes[0].sync),
        (8192, 4096, false)
    );
    assert_eq!((writes[1].offset, writes[1].sync), (16384, true));
    assert!(!rec.kinds(OpKind::Flush).is_empty(), "fsync is a flush");
}

/// A direct-I/O mount whose medium answers after `delay`, holding a 1 MiB
/// disk.img.
fn slow_disk(name: &str, delay: Duration) -> Mounted {
    let rec = Arc::new(Recorder {
        delay_ns: delay.as_nanos() as u64,
        ..Default::default()
    });
    let m = Mounted::new(name, rec, Some(CacheMode::Direct));
    fs::write(m.back("disk.img"), vec![0u8; 1 << 20]).unwrap();
    m
}

#[test]
fn replies_wait_for_the_medium_and_many_wait_at_once() {
    let delay = Duration::from_millis(5);
    let m = slow_disk("timing", delay);
    let f = Arc::new(File::open(m.mnt("disk.img")).unwrap());
    let t = Instant::now();
    f.read_at(&mut [0u8; 4096], 0).unwrap();
    let one = t.elapsed();
    assert!(
        one >= delay,
        "one read took {one:?}, under the medium's {delay:?}"
    );
    // 32 reads in flight: together they take about one delay, not 32.
    let t = Instant::now();
    let threads: Vec<_> = (0..32u64)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                f.read_at(&mut [0u8; 4096], i * 4096).unwrap();
                t.elapsed()
            })
        })
        .collect();
    let each: Vec<Duration> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let all = t.elapsed();
    assert!(each.iter().all(|&d| d >= delay), "{each:?}");
    assert!(
        all < delay * 8,
        "32 concurrent reads took {all:?}: they waited in turn, not at once"
    );
}

#[test]
fn a_direct_mount_measures_its_round_trip_without_the_medium() {
    let rec = Arc::new(Recorder {
        delay_ns: 5_000_000,
        ..Default::default()
    });
    let opts = Options {
        threads: 4,
        mode: Some(CacheMode::Direct),
        calibrate: true,
        store: None,
    };
    let m = Mounted::with("calibrate", rec.clone(), &opts);
    let overhead = m.server.overhead_ns();
    assert!(
        overhead > 0 && overhead <= super::calibrate::MAX_OVERHEAD_NS,
        "round trip {overhead} ns"
    );
    // The probe reads were held by the server, not asked of the medium, and
    // the probe file is gone.
    assert!(
        rec.kinds(OpKind::Read).is_empty(),
        "{:?}",
        rec.kinds(OpKind::Read)
    );
    let left: Vec<_> = fs::read_dir(m.dir.join("back")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // A read now replies `overhead` before the medium's time as the server
    // sees it (and up to the timer's lead earlier), never sooner.
    fs::write(m.back("disk.img"), vec![0u8; 1 << 20]).unwrap();
    let f = File::open(m.mnt("disk.img")).unwrap();
    let t = Instant::now();
    f.read_at(&mut [0u8; 4096], 0).unwrap();
    let took = t.elapsed();
    let floor = Duration::from_nanos(5_000_000 - overhead - super::reply::Lead::MAX_NS);
    assert!(took >= floor, "a read took {took:?}, under {floor:?}");
    assert_eq!(rec.kinds(OpKind::Read).len(), 1);
    // A ram mount serves from the page cache: nothing to measure.
    let ram = Mounted::with("calibrate-ram", Arc::new(Ram), &Options::default());
    assert_eq!(ram.server.overhead_ns(), 0);
    // Nor any held reply to keep on time: no lead, no real-time thread;
    // the direct mount has both.
    assert!(!ram.server.leads() && m.server.leads());
}

#[test]
fn a_queue_of_128_direct_reads_reaches_the_medium_at_once() {
    use io_uring::{IoUring, opcode, types};
    use std::os::fd::AsRawFd;
    let delay = Duration::from_millis(50);
    let m = slow_disk("qd128", delay);
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.mnt("disk.img"))
        .unwrap();
    let (mut buf, off) = aligned(128 * 4096);
    let base = buf[off..].as_mut_ptr();
    let mut ring = IoUring::new(128).unwrap();
    let t = Instant::now();
    for i in 0..128u64 {
        // SAFETY: each read targets its own 4 KiB of `buf`, which outlives the
        // ring's use of it (we wait for every completion below).
        let sqe = opcode::Read::new(
            types::Fd(f.as_raw_fd()),
            unsafe { base.add(i as usize * 4096) },
            4096,
        )
        .offset(i * 4096)
        .build()
        .user_data(i);
        // SAFETY: the entry's buffer is valid until its completion (see above).
        unsafe { ring.submission().push(&sqe).unwrap() };
    }
    ring.submit_and_wait(128).unwrap();
    let all = t.elapsed();
    let done: Vec<i32> = ring.completion().map(|c| c.result()).collect();
    assert_eq!(done.len(), 128);
    assert!(done.iter().all(|&r| r == 4096), "{done:?}");
    // The kernel's default of 12 background requests would take 11 rounds.
    assert!(
        all < delay * 4,
        "128 queued reads took {all:?} at {delay:?} each: the kernel held them back"
    );
}

#[test]
fn backing_errors_reach_the_caller_unchanged() {
    let m = Mounted::new("errors", Arc::new(Ram), Some(CacheMode::Direct));
    // A small tmpfs as part of the backing tree: writes fill it.
    let small = m.back("small");
    fs::create_dir(&small).unwrap();
    let o = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .output()
        .unwrap();
    assert!(o.status.success(), "mount tmpfs: {o:?}");
    let fill = m.mnt("small/fill");
    let result = std::panic::catch_unwind(move || {
        let mut f = File::create(&fill).unwrap();
        let chunk = vec![7u8; 65536];
        let e = (0..16)
            .find_map(|_| f.write_all(&chunk).err())
            .expect("a 256 KiB tmpfs fills up");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    });
    let _ = Command::new("umount").arg("-l").arg(&small).status();
    result.unwrap();
    // A file deleted behind the mount: an open descriptor keeps it, a new
    // lookup finds nothing once the kernel's entry expires.
    fs::write(m.back("gone"), b"data").unwrap();
    let f = File::open(m.mnt("gone")).unwrap();
    fs::remove_file(m.back("gone")).unwrap();
    assert_eq!(f.read_at(&mut [0u8; 4], 0).unwrap(), 4);
    std::thread::sleep(Duration::from_millis(1100));
    let e = File::open(m.mnt("gone")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
}

/// Make the kernel drop unused dentries and inodes (FORGET reaches us).
fn drop_inode_caches() {
    fs::write("/proc/sys/vm/drop_caches", b"2").unwrap();
}

#[test]
fn file_handles_open_files_the_kernel_forgot_until_they_are_deleted() {
    let m = Mounted::new("handles", Arc::new(Ram), Some(CacheMode::Direct));
    fs::create_dir(m.back("sub")).unwrap();
    fs::write(m.back("sub/f"), b"by handle").unwrap();
    let mount = File::open(m.mnt("")).unwrap();
    let handle = |p: &Path| sys::name_to_handle(File::open(p).unwrap().as_fd()).unwrap();
    let (hf, hd) = (handle(&m.mnt("sub/f")), handle(&m.mnt("sub")));
    drop_inode_caches();
    let f = sys::open_by_handle(mount.as_fd(), &hf, libc::O_RDONLY).expect("open by handle");
    let mut buf = [0u8; 16];
    assert_eq!(sys::pread_full(f.as_fd(), &mut buf, 0).unwrap(), 9);
    assert_eq!(&buf[..9], b"by handle");
    drop(f);
    let d = sys::open_by_handle(mount.as_fd(), &hd, libc::O_RDONLY | libc::O_DIRECTORY)
        .expect("a directory by handle");
    assert!(sys::openat(d.as_fd(), b"f", libc::O_RDONLY, 0).is_ok());
    drop(d);
    // Deleted while open: the open file keeps it reachable, as on a local
    // file system.
    let held = File::open(m.mnt("sub/f")).unwrap();
    fs::remove_file(m.back("sub/f")).unwrap();
    let again = sys::open_by_handle(mount.as_fd(), &hf, libc::O_RDONLY);
    assert!(again.is_ok(), "{again:?}");
    drop((again, held));
    // Once nothing holds it, the handle is stale, whether the kernel still
    // caches the inode or has forgotten it.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        sys::open_by_handle(mount.as_fd(), &hf, libc::O_RDONLY).err(),
        Some(sys::Errno(libc::ESTALE))
    );
    drop_inode_caches();
    assert_eq!(
        sys::open_by_handle(mount.as_fd(), &hf, libc::O_RDONLY).err(),
        Some(sys::Errno(libc::ESTALE))
    );
}

/// A loop device on `file` with direct I/O, detached on drop.
struct Loop(String);

impl Loop {
    fn attach(file: &Path) -> Loop {
        let o = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "losetup: {o:?}");
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let dio = fs::read_to_string(format!(
            "/sys/block/{}/loop/dio",
            dev.trim_start_matches("/dev/")
        ))
        .unwrap_or_default();
        let l = Loop(dev);
        assert_eq!(
            dio.trim(),
            "1",
            "{}: direct I/O refused on the FUSE file",
            l.0
        );
        l
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn a_loop_device_with_direct_io_reads_and_writes_the_store() {
    for mode in [CacheMode::Direct, CacheMode::Passthrough] {
        let rec = Arc::new(Recorder::default());
        let m = Mounted::new(&format!("loop-{}", mode.name()), rec.clone(), Some(mode));
        let len = 4 << 20;
        let content = pattern(len, 3);
        fs::write(m.back("disk.img"), &content).unwrap();
        {
            let lo = Loop::attach(&m.mnt("disk.img"));
            let dev = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(&lo.0)
                .unwrap();
            let (mut buf, off) = aligned(65536);
            let b = &mut buf[off..off + 65536];
            dev.read_exact_at(b, 1 << 20).unwrap();
            assert_eq!(&b[..], &content[1 << 20..(1 << 20) + 65536]);
            b.copy_from_slice(&pattern(65536, 5));
            dev.write_all_at(b, 2 << 20).unwrap();
            dev.sync_all().unwrap();
        }
        let back = fs::read(m.back("disk.img")).unwrap();
        assert_eq!(&back[2 << 20..(2 << 20) + 65536], &pattern(65536, 5)[..]);
        if mode == CacheMode::Direct {
            let reads = rec.kinds(OpKind::Read);
            assert!(
                reads.iter().any(|o| o.offset == 1 << 20),
                "the loop device's read reached the medium: {reads:?}"
            );
            assert!(!rec.kinds(OpKind::Flush).is_empty(), "its flush too");
        }
    }
}

/// The chunk indexes of `Written::Ranges`, or a panic naming what it got.
fn chunks_of(w: crate::media::dirty::Written) -> Vec<u64> {
    use crate::media::dirty::{CHUNK, Written};
    match w {
        Written::Ranges(r) => r
            .iter()
            .flat_map(|&(f, t)| (f / CHUNK..t / CHUNK).collect::<Vec<_>>())
            .collect(),
        Written::Unknown(why) => panic!("unknown: {why}"),
    }
}

#[test]
fn every_change_through_the_mount_is_in_the_written_map_and_a_take_clears_it() {
    use crate::media::dirty::{CHUNK, Written};
    for mode in [CacheMode::Direct, CacheMode::PageCache] {
        let m = Mounted::new(&format!("dirty-{}", mode.name()), Arc::new(Ram), Some(mode));
        let size = 64 * CHUNK;
        let f = File::create(m.back("disk.img")).unwrap();
        f.set_len(size).unwrap();
        drop(f);
        assert_eq!(chunks_of(m.server.take_written()), Vec::<u64>::new());
        let rw = OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.mnt("disk.img"))
            .unwrap();
        // Writes at random offsets, some across a chunk boundary.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut want = std::collections::BTreeSet::new();
        for _ in 0..20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let off = x % (size - 8192);
            rw.write_all_at(&pattern(8192, 3), off).unwrap();
            want.extend(off / CHUNK..=(off + 8191) / CHUNK);
        }
        rw.sync_all().unwrap();
        let got = chunks_of(m.server.take_written());
        assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{}", mode.name());
        assert_eq!(chunks_of(m.server.take_written()), Vec::<u64>::new());
        // A punched hole and a shrinking truncate are bounded changes.
        // SAFETY: fallocate(2) on an open descriptor we own.
        let r = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(&rw),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                (10 * CHUNK + 4096) as libc::off_t,
                4096,
            )
        };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        rw.set_len(62 * CHUNK + 1).unwrap();
        assert_eq!(chunks_of(m.server.take_written()), vec![10, 62, 63]);
        drop(rw);
        // A truncating open empties what the file held.
        drop(File::create(m.mnt("disk.img")).unwrap());
        assert_eq!(
            chunks_of(m.server.take_written()),
            (0..=62).collect::<Vec<_>>()
        );
        // A new file's writes mark their offsets; a rename (that may replace
        // the store) cannot be bounded.
        fs::write(m.mnt("other"), b"x").unwrap();
        assert_eq!(chunks_of(m.server.take_written()), vec![0]);
        fs::rename(m.mnt("other"), m.mnt("disk.img")).unwrap();
        match m.server.take_written() {
            Written::Unknown(why) => assert!(why.contains("rename"), "{why}"),
            w => panic!("{}: a rename gave {w:?}", mode.name()),
        }
        assert_eq!(chunks_of(m.server.take_written()), Vec::<u64>::new());
        fs::remove_file(m.mnt("disk.img")).unwrap();
        assert!(
            matches!(m.server.take_written(), Written::Unknown(w) if w.contains("unlink")),
            "{}: an unlink cannot be bounded",
            mode.name()
        );
    }
    // Passthrough: the kernel writes the backing file, unseen.
    let m = Mounted::new(
        "dirty-passthrough",
        Arc::new(Ram),
        Some(CacheMode::Passthrough),
    );
    fs::write(m.mnt("disk.img"), b"x").unwrap();
    assert!(
        matches!(m.server.take_written(), Written::Unknown(w) if w.contains("passthrough")),
        "passthrough cannot tell"
    );
}

#[test]
fn with_the_store_named_only_its_changes_are_in_the_written_map() {
    use crate::media::dirty::{CHUNK, Written};
    for mode in [CacheMode::Direct, CacheMode::PageCache] {
        let opts = Options {
            threads: 4,
            mode: Some(mode),
            calibrate: false,
            store: Some("disk.img".into()),
        };
        let m = Mounted::with(&format!("scope-{}", mode.name()), Arc::new(Ram), &opts);
        let rw = OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.mnt("disk.img"))
            .unwrap();
        rw.set_len(64 * CHUNK).unwrap();
        assert_eq!(
            chunks_of(m.server.take_written()),
            (0..64).collect::<Vec<_>>(),
            "{}: the store's growth",
            mode.name()
        );
        // Other files written, truncated, emptied, renamed and unlinked, one
        // of them under the store's name in a subdirectory: the store is as it was.
        fs::write(m.mnt("other"), pattern(3 * CHUNK as usize, 1)).unwrap();
        OpenOptions::new()
            .write(true)
            .open(m.mnt("other"))
            .unwrap()
            .set_len(CHUNK)
            .unwrap();
        drop(File::create(m.mnt("other")).unwrap());
        fs::create_dir(m.mnt("sub")).unwrap();
        fs::write(m.mnt("sub/disk.img"), pattern(8192, 2)).unwrap();
        fs::rename(m.mnt("other"), m.mnt("moved")).unwrap();
        fs::rename(m.mnt("sub/disk.img"), m.mnt("sub/b")).unwrap();
        fs::remove_file(m.mnt("moved")).unwrap();
        fs::remove_file(m.mnt("sub/b")).unwrap();
        assert_eq!(
            chunks_of(m.server.take_written()),
            Vec::<u64>::new(),
            "{}: other files' changes",
            mode.name()
        );
        // The store's own writes still count.
        rw.write_all_at(&pattern(4096, 3), 5 * CHUNK).unwrap();
        rw.sync_all().unwrap();
        assert_eq!(
            chunks_of(m.server.take_written()),
            vec![5],
            "{}",
            mode.name()
        );
        // A rename onto the store's name replaces it: everything is marked,
        // and from then on every file's changes count.
        fs::write(m.mnt("new"), b"x").unwrap();
        assert_eq!(chunks_of(m.server.take_written()), Vec::<u64>::new());
        fs::rename(m.mnt("new"), m.mnt("disk.img")).unwrap();
        match m.server.take_written() {
            Written::Unknown(why) => assert!(why.contains("rename"), "{why}"),
            w => panic!("{}: a rename onto the store gave {w:?}", mode.name()),
        }
        fs::write(m.mnt("third"), b"x").unwrap();
        assert_eq!(
            chunks_of(m.server.take_written()),
            vec![0],
            "{}: after the store was replaced",
            mode.name()
        );
    }
    // The store replaced in the backing directory, where the server does not
    // see it: the next take says it cannot tell, and every file counts after.
    let opts = Options {
        threads: 4,
        mode: Some(CacheMode::Direct),
        calibrate: false,
        store: Some("disk.img".into()),
    };
    let m = Mounted::with("scope-behind", Arc::new(Ram), &opts);
    fs::write(m.mnt("other"), b"x").unwrap();
    assert_eq!(chunks_of(m.server.take_written()), Vec::<u64>::new());
    fs::write(m.back("new"), b"y").unwrap();
    fs::rename(m.back("new"), m.back("disk.img")).unwrap();
    match m.server.take_written() {
        Written::Unknown(why) => assert!(why.contains("backing directory"), "{why}"),
        w => panic!("a store replaced behind the server gave {w:?}"),
    }
    fs::write(m.mnt("other"), b"x").unwrap();
    assert_eq!(chunks_of(m.server.take_written()), vec![0]);
}
