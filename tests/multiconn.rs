//! Several connections per target (issue 14): `nconnect=4` on the lab's NFSv3,
//! NFSv4, NBD and iSCSI targets runs a verified random read/write workload with no
//! error, over four TCP connections of the run's own process that each
//! carried requests (read from `ss`), and the run's JSON names the target with
//! its `nconnect`. Needs root and ./setup.sh's packages.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};
use storlab::target::{NbdAddr, NfsTarget, Target};
use support::TempDir;
use support::lab::Lab;
use support::run::{Run, total};

/// `url` with one more query option.
fn with_option(url: &str, opt: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{opt}")
}

/// The server port of an nfs://, iscsi:// or nbd:// URL.
fn port_of(url: &str) -> u16 {
    match Target::parse(url).unwrap() {
        Target::Nfs(NfsTarget { port, .. }) | Target::Iscsi { port, .. } => port,
        Target::Nbd {
            addr: NbdAddr::Tcp { port, .. },
            ..
        } => port,
        t => panic!("no TCP port in {t}"),
    }
}

/// Bytes acknowledged on each established TCP connection of process `pid`
/// to port `port` (`ss -tinp`: one line per socket, its TCP info on the next).
fn bytes_per_connection(pid: u32, port: u16) -> Vec<u64> {
    let o = Command::new("ss")
        .args(["-H", "-t", "-i", "-n", "-p", "state", "established"])
        .output()
        .expect("ss (iproute2) is needed");
    let out = String::from_utf8_lossy(&o.stdout);
    let mut lines = out.lines();
    let mut got = Vec::new();
    let owner = format!(",pid={pid},");
    let peer = format!(":{port}");
    while let Some(line) = lines.next() {
        let mine = line.contains(&owner)
            && line
                .split_whitespace()
                .nth(3)
                .is_some_and(|p| p.ends_with(&peer));
        if !mine {
            continue;
        }
        let info = lines.next().unwrap_or("");
        let acked = info
            .split_whitespace()
            .find_map(|f| f.strip_prefix("bytes_acked:"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        got.push(acked);
    }
    got
}

/// A verified 4 KiB random read/write run on `url` with `nconnect=4` over
/// 16 MiB at `offset` (the lab's targets share one backing file; verify knows
/// each URL as its own store): four busy connections while it runs, no
/// error, no bad block.
fn four_connections(lab: &Lab, dir: &TempDir, name: &str, offset: &str) {
    let url = with_option(&lab.url(name), "nconnect=4");
    let port = port_of(&url);
    let mut cmd = lab.storlab();
    cmd.env("STORLAB_VERIFY_DIR", dir.join(&format!("verify-{name}")));
    let args = [
        "--target",
        &url,
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--iodepth",
        "16",
        "--size",
        "16m",
        "--offset",
        offset,
        "--runtime",
        "4",
        "--verify",
        "--io-timeout",
        "10s",
    ];
    let mut run = Run::start_cmd(cmd, dir.path(), name, &args);
    let pid = run.pid().unwrap();
    let start = Instant::now();
    // Each connection carried requests: 64 KiB is about 500 calls.
    let busy = loop {
        let per = bytes_per_connection(pid, port);
        if per.len() == 4 && per.iter().all(|&b| b > 64 << 10) {
            break per;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name}: want 4 busy connections to port {port}, ss shows {per:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (status, err, _) = run.wait(Duration::from_secs(60), name);
    assert!(status.success(), "{name}: {err}");
    let doc = run.doc();
    let text = doc.to_string();
    assert!(
        text.contains("nconnect=4"),
        "{name}: the target's URL: {text}"
    );
    for d in ["read", "write"] {
        assert!(total(&doc, d, "ios") > 1000, "{name}: {d} I/Os: {text}");
        assert_eq!(total(&doc, d, "errors"), 0, "{name}: {d} errors");
    }
    assert_eq!(total(&doc, "", "verify_errors"), 0, "{name}: bad blocks");
    println!("{name}: bytes acknowledged per connection {busy:?}");
}

#[test]
fn nconnect_4_on_every_lab_protocol() {
    support::assert_root("the lab needs root");
    let lab = Lab::builder("multiconn", "64m").loopback().up();
    let dir = TempDir::new("multiconn", "runs");
    let runs = [
        ("nfs3", "0"),
        ("nfs4", "16m"),
        ("nbd", "32m"),
        ("iscsi", "48m"),
    ];
    for (name, offset) in runs {
        four_connections(&lab, &dir, name, offset);
    }
    lab.down_clean();
}
