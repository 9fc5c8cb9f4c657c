//! Durability on the real lab: a synchronous random-write run with a journal,
//! the server SIGKILLed mid-run (ganesha over NFSv3, tgtd over iSCSI, nbdkit
//! over NBD, each in turn) and restarted, or the storage host's link cut and
//! restored; then `storlab verify --journal` must find every acknowledged
//! write readable with its content. Needs root and the lab's packages; every
//! lab is torn down by a guard, every storlab child is bounded in time.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::lab::Lab;
use support::text;

static SERIAL: Mutex<()> = Mutex::new(());

/// Longest a run may take after its fault before the test fails (and kills it).
const RUN_BOUND: Duration = Duration::from_secs(90);

/// A lab of 256 MiB in `storlab-dur-TAG-PID`, its state in `lab/` there and
/// `STORLAB_VERIFY_DIR` in `verify/`, leaving the directory to the test's own files.
fn lab_up(tag: &str) -> Lab {
    Lab::builder(&format!("dur-{tag}"), "256m")
        .state_subdir("lab")
        .env_in_dir("STORLAB_VERIFY_DIR", "verify")
        .up()
}

impl Lab {
    fn journal(&self) -> PathBuf {
        self.dir.join("writes.jrnl")
    }
    /// A synchronous random-write run with the journal, in the background.
    fn start_run(&self, url: &str, runtime: &str) -> Child {
        self.storlab()
            .args([
                "run",
                "--target",
                url,
                "--rw",
                "randwrite",
                "--bs",
                "4k",
                "--iodepth",
                "8",
                "--size",
                "64m",
                "--runtime",
                runtime,
                "--sync",
                "dsync",
                "--io-timeout",
                "20s",
                "--no-db",
                "-q",
                "--journal",
            ])
            .arg(self.journal())
            .arg("--json")
            .arg(self.dir.join("run.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
    /// `storlab verify --journal` of `url`, and its output as text.
    fn verify_journal(&self, url: &str) -> (Output, String) {
        let o = self
            .storlab()
            .args(["verify", "--journal"])
            .arg(self.journal())
            .arg(url)
            .output()
            .unwrap();
        let t = text(&o);
        (o, t)
    }
    /// `storlab verify --journal` of `url`: must pass with blocks checked.
    fn verify_ok(&self, url: &str, what: &str) {
        let (o, t) = self.verify_journal(url);
        assert!(o.status.success(), "{what}: acknowledged writes lost: {t}");
        assert!(t.contains(": 0 bad"), "{what}: {t}");
        let blocks: u64 = t
            .split("verified ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            blocks > 100,
            "{what}: too few journaled blocks to prove anything: {t}"
        );
        eprintln!("{what}: {}", t.trim());
    }
    /// The check can fail: flip a byte in 5 written blocks of the backing
    /// file; `verify --journal` through the protocol must report them.
    fn corruption_is_seen_through(&self, url: &str, what: &str) {
        use std::io::{Read, Seek, SeekFrom, Write};
        let backing = self.backing();
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&backing)
            .unwrap();
        let mut flipped = Vec::new();
        let mut block = [0u8; 512];
        let mut at = 4096 * 7 + 512;
        while flipped.len() < 5 && at < (64 << 20) {
            f.seek(SeekFrom::Start(at)).unwrap();
            f.read_exact(&mut block).unwrap();
            if block.starts_with(b"STLBVRFY") {
                f.seek(SeekFrom::Start(at + 200)).unwrap();
                f.write_all(&[block[200] ^ 0x5A]).unwrap();
                flipped.push(at);
            }
            at += 1 << 20;
        }
        f.sync_all().unwrap();
        assert_eq!(
            flipped.len(),
            5,
            "{what}: written blocks in the backing file"
        );
        let (o, t) = self.verify_journal(url);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{what}: corruption not detected: {t}"
        );
        let reported: Vec<u64> = t
            .lines()
            .filter(|l| l.starts_with("storlab: verify: corrupt"))
            .filter_map(|l| {
                l.split(" at offset ")
                    .nth(1)?
                    .split(':')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        assert!(
            !reported.is_empty() && reported.iter().all(|o| flipped.contains(o)),
            "{what}: flipped {flipped:?}, reported {reported:?}: {t}"
        );
    }
}

/// Wait for `child` at most `bound`; past it, kill it (by its PID) and fail.
fn wait_bounded(mut child: Child, bound: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what}: the run did not end within {bound:?}: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn kill_restart_verify(target: &str, server: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab_up(&format!("kill-{server}"));
    let url = lab.url(target);
    let child = lab.start_run(&url, "30");
    std::thread::sleep(Duration::from_millis(3000));
    // SAFETY: kill(2) on the lab's own server, by the PID the lab recorded.
    unsafe { libc::kill(lab.pid(server), libc::SIGKILL) };
    let out = wait_bounded(child, RUN_BOUND, server);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{server}: a run whose server died fails: {}",
        text(&out)
    );
    let o = lab.cmd(&["restart", server]);
    assert!(o.status.success(), "restart {server}: {}", text(&o));
    lab.verify_ok(&url, &format!("{server} killed mid-run"));
    lab.corruption_is_seen_through(&url, server);
}

#[test]
fn nbdkit_killed_mid_run_loses_no_acknowledged_write() {
    kill_restart_verify("nbd", "nbdkit");
}

#[test]
fn tgtd_killed_mid_run_loses_no_acknowledged_write() {
    kill_restart_verify("iscsi", "tgtd");
}

#[test]
fn ganesha_killed_mid_run_loses_no_acknowledged_write() {
    kill_restart_verify("nfs3", "ganesha");
}

#[test]
fn a_link_cut_mid_run_and_restored_loses_no_acknowledged_write() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab_up("link");
    let dev = lab.host_if();
    let ip = |state: &str| {
        let o = Command::new("ip")
            .args(["link", "set", &dev, state])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ip link set {dev} {state}: {}",
            text(&o)
        );
    };
    for target in ["nbd", "iscsi", "nfs3"] {
        let url = lab.url(target);
        let _ = std::fs::remove_file(lab.journal());
        let child = lab.start_run(&url, "10");
        std::thread::sleep(Duration::from_millis(2500));
        ip("down");
        std::thread::sleep(Duration::from_millis(3000));
        ip("up");
        // The run either rides the cut out (TCP retransmits) or ends with an
        // error naming the target; either way within its bound.
        let out = wait_bounded(child, RUN_BOUND, target);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{target}: unexpected exit {code:?}: {}",
            text(&out)
        );
        // The cut took effect: some whole interval moved (almost) nothing.
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(lab.dir.join("run.json")).unwrap()).unwrap();
        let ios: Vec<u64> = doc["jobs"][0]["points"][0]["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["stats"]["write"]["ios"].as_u64().unwrap_or(0))
            .collect();
        let max = ios.iter().copied().max().unwrap_or(0);
        assert!(
            max > 0 && ios.iter().any(|&n| n * 10 < max),
            "{target}: no interval shows the cut: {ios:?}"
        );
        lab.verify_ok(
            &url,
            &format!("{target} link cut mid-run (run exit {code:?})"),
        );
    }
}
