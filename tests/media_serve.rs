//! The media server as the lab runs it: `storlab media-serve` started by
//! `MediaServer`, stopped by SIGTERM, killed by SIGKILL or stopped by SIGSTOP
//! with `cleanup` leaving nothing mounted, a start that fails saying why, and
//! nfs-ganesha exporting the FUSE mount to storlab's own NFS client. Needs
//! root, /dev/fuse and ./setup.sh's packages (nfs-ganesha).

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use storlab::media::fuse::mount::mounted;
use storlab::media::serve::{MediaServer, cleanup};
use support::media::Dirs;
use support::{alive, text};

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
    let missing = d.0.join("no-such-dir");
    let e = MediaServer::start_with(bin(), &missing, &d.mnt(), "ram", None, None, &d.log())
        .unwrap_err();
    assert!(
        e.contains("exited") && e.contains("--backing") && e.contains("not a directory"),
        "{e}"
    );
    assert!(mounted(&d.mnt()).is_empty());
    let e = MediaServer::start_with(bin(), &d.back(), &d.mnt(), "ssd-typo", None, None, &d.log())
        .unwrap_err();
    assert!(e.contains("\"ssd-typo\"") && e.contains("allowed"), "{e}");
    // A mount point inside the backing directory would serve itself.
    fs::create_dir(d.back().join("inner")).unwrap();
    let e = MediaServer::start_with(
        bin(),
        &d.back(),
        &d.back().join("inner"),
        "ram",
        None,
        None,
        &d.log(),
    )
    .unwrap_err();
    assert!(e.contains("one holds the other"), "{e}");
    // The same mount point twice: the second server refuses and says so.
    let s = d.start("ram");
    let e = MediaServer::start_with(bin(), &d.back(), &d.mnt(), "ram", None, None, &d.log())
        .unwrap_err();
    assert!(e.contains("already has storlab's media file system"), "{e}");
    assert_eq!(mounted(&d.mnt()).len(), 1, "the first server's mount stays");
    s.stop().unwrap();
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
