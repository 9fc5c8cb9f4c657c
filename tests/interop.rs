//! Interoperability beyond the lab's servers (issue 14, item 3): every other
//! NFS, iSCSI and NBD server Debian ships that runs here without kernel
//! modules (docs/interop.md has the matrix and what was left out). Each test
//! starts its server on 127.0.0.1 and a free port, serving a file in a
//! temporary directory, by PID; runs a verified 4 KiB random read/write
//! workload (on one connection and on two), and a verified sync-write
//! workload, each with zero I/O errors and zero bad blocks; and stops the
//! server by PID. A server whose package
//! cannot be installed is skipped with the reason printed. Needs root.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use storlab::process::{self, Proc};
use support::run::{Run, total};
use support::{TempDir, free_port};

/// The backing file's size; the workloads use the first 32 MiB of it.
const BACKING: u64 = 64 << 20;

/// A server process started by a test, stopped by its PID on drop.
struct Server {
    proc: Proc,
    name: &'static str,
}

impl Server {
    /// Start `bin args` with its output in `dir/NAME.log` (as a daemon that
    /// writes `pid_file`, when given), ready once 127.0.0.1:`port` accepts a
    /// connection.
    fn start(
        name: &'static str,
        bin: &Path,
        args: &[String],
        dir: &Path,
        port: u16,
        pid_file: Option<&Path>,
    ) -> Server {
        let log = dir.join(format!("{name}.log"));
        let proc = match pid_file {
            None => process::spawn(bin, args, &log),
            Some(f) => process::spawn_daemon(bin, args, &log, f),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", process::tail(&log, 20)));
        let s = Server { proc, name };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                s.proc.alive(),
                "{name} exited before it listened: {}",
                s.proc.log_tail(20)
            );
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{name} not listening on port {port} after 20 s: {}",
                s.proc.log_tail(20)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// Stop by PID (SIGTERM, SIGKILL after 5 s); fails the test if it survives.
    fn stop(self) {
        assert!(
            self.proc.alive(),
            "{} died during the test: {}",
            self.name,
            self.proc.log_tail(20)
        );
        assert!(
            self.proc.stop(Duration::from_secs(5)),
            "{} (pid {}) still runs",
            self.name,
            self.proc.pid
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.proc.stop(Duration::from_secs(5));
    }
}

/// The binary `bin` of Debian package `pkg`, installed when missing; `None`
/// (with the reason printed) when the package cannot be installed.
fn need(pkg: &str, bin: &str) -> Option<PathBuf> {
    let found = || {
        ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(bin))
            .find(|p| p.exists())
    };
    if let Some(p) = found() {
        return Some(p);
    }
    let o = Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends", pkg])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output();
    match (found(), o) {
        (Some(p), _) => Some(p),
        (None, Ok(o)) => {
            println!(
                "skipped: Debian package {pkg} cannot be installed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        (None, Err(e)) => {
            println!("skipped: Debian package {pkg} cannot be installed: apt-get: {e}");
            None
        }
    }
}

/// A directory with a zeroed backing file `disk.img`.
fn backing(tag: &str) -> TempDir {
    support::assert_root("the interop tests install and start servers");
    let dir = TempDir::new("interop", tag);
    let f = std::fs::File::create(dir.join("disk.img")).unwrap();
    f.set_len(BACKING).unwrap();
    dir
}

/// One verified run of `args` on `url`: exit 0, at least 100 I/Os, no I/O
/// error, no bad block. Returns the backend line of the run.
fn verified(dir: &TempDir, url: &str, tag: &str, args: &[&str]) -> String {
    let mut cmd = support::storlab();
    cmd.env("STORLAB_VERIFY_DIR", dir.join("verify"));
    let mut all = vec![
        "--target",
        url,
        "--bs",
        "4k",
        "--size",
        "32m",
        "--verify",
        "--allow-overwrite",
        "--io-timeout",
        "10s",
    ];
    all.extend_from_slice(args);
    let mut run = Run::start_cmd(cmd, dir.path(), tag, &all);
    let (status, err, _) = run.wait(Duration::from_secs(120), tag);
    assert!(status.success(), "{tag} on {url}: {err}");
    let doc = run.doc();
    let ios = total(&doc, "read", "ios") + total(&doc, "write", "ios");
    assert!(ios >= 100, "{tag} on {url}: {ios} I/Os");
    for d in ["read", "write"] {
        assert_eq!(total(&doc, d, "errors"), 0, "{tag} on {url}: {d} errors");
    }
    assert_eq!(total(&doc, "", "verify_errors"), 0, "{tag}: bad blocks");
    let backend = doc["jobs"][0]["points"][0]["backend"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    println!("{tag} on {url}: {ios} I/Os, 0 errors, 0 bad blocks ({backend})");
    backend
}

/// The workloads of the matrix on `url`: randrw, sync writes, and randrw
/// over two connections (`nconnect=2`: two sessions for iSCSI; NBD
/// multi-conn, which every NBD server here advertises).
fn workloads(dir: &TempDir, url: &str) {
    verified(
        dir,
        &format!("{url}?nconnect=2"),
        "nconnect2",
        &["--rw", "randrw", "--iodepth", "16", "--runtime", "2"],
    );
    verified(
        dir,
        url,
        "randrw",
        &["--rw", "randrw", "--iodepth", "16", "--runtime", "3"],
    );
    verified(
        dir,
        url,
        "syncwrite",
        &[
            "--rw",
            "randwrite",
            "--sync",
            "1",
            "--iodepth",
            "4",
            "--runtime",
            "2",
        ],
    );
}

#[test]
fn nbd_server() {
    let Some(bin) = need("nbd-server", "nbd-server") else {
        return;
    };
    let dir = backing("nbd-server");
    let port = free_port();
    let conf = dir.join("nbd-server.conf");
    std::fs::write(
        &conf,
        format!(
            "[generic]\nport = {port}\nallowlist = false\n\
             [store]\nexportname = {}\nflush = true\nfua = true\n",
            dir.join("disk.img").display()
        ),
    )
    .unwrap();
    // It forks per client; -d (no fork) would serve one client and exit.
    let pid = dir.join("nbd-server.pid");
    let args = [
        "-C".to_string(),
        conf.display().to_string(),
        "-p".into(),
        pid.display().to_string(),
    ];
    let srv = Server::start("nbd-server", &bin, &args, dir.path(), port, Some(&pid));
    workloads(&dir, &format!("nbd://127.0.0.1:{port}/store"));
    srv.stop();
}

#[test]
fn qemu_nbd() {
    let Some(bin) = need("qemu-utils", "qemu-nbd") else {
        return;
    };
    let dir = backing("qemu-nbd");
    let port = free_port();
    let args: Vec<String> = [
        "--format=raw",
        "--export-name=store",
        "--bind=127.0.0.1",
        "--persistent",
        "--shared=8",
        "--cache=none",
        "--aio=threads",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("--port={port}"),
        dir.join("disk.img").display().to_string(),
    ])
    .collect();
    let srv = Server::start("qemu-nbd", &bin, &args, dir.path(), port, None);
    let url = format!("nbd://127.0.0.1:{port}/store");
    workloads(&dir, &url);
    verified(
        &dir,
        &format!("{url}?replies=structured"),
        "structured",
        &["--rw", "randrw", "--iodepth", "16", "--runtime", "2"],
    );
    srv.stop();
}

#[test]
fn istgt() {
    let Some(bin) = need("istgt", "istgt") else {
        return;
    };
    let dir = backing("istgt");
    let port = free_port();
    let ctl = free_port();
    let conf = dir.join("istgt.conf");
    let auth = dir.join("auth.conf");
    std::fs::write(&auth, "").unwrap();
    std::fs::write(
        &conf,
        format!(
            r#"[Global]
  NodeBase "iqn.2026-11.test.storlab"
  PidFile {pid}
  AuthFile {auth}
  MediaDirectory {dir}
  Timeout 30
  NopInInterval 20
  DiscoveryAuthMethod None
  MaxSessions 16
  MaxConnections 4
  FirstBurstLength 262144
  MaxBurstLength 1048576
  MaxRecvDataSegmentLength 262144
  InitialR2T Yes
  ImmediateData Yes
[UnitControl]
  AuthMethod None
  Portal UC1 127.0.0.1:{ctl}
  Netmask 127.0.0.1
[PortalGroup1]
  Portal DA1 127.0.0.1:{port}
[InitiatorGroup1]
  InitiatorName "ALL"
  Netmask 127.0.0.1
[LogicalUnit1]
  TargetName disk1
  Mapping PortalGroup1 InitiatorGroup1
  AuthMethod None
  UseDigest Auto
  UnitType Disk
  LUN0 Storage {disk} 64MB
"#,
            pid = dir.join("istgt.pid").display(),
            auth = auth.display(),
            dir = dir.path().display(),
            disk = dir.join("disk.img").display(),
        ),
    )
    .unwrap();
    let args = ["-c".to_string(), conf.display().to_string(), "-D".into()];
    let srv = Server::start("istgt", &bin, &args, dir.path(), port, None);
    let url = format!("iscsi://127.0.0.1:{port}/iqn.2026-11.test.storlab:disk1/0");
    workloads(&dir, &url);
    srv.stop();
}
