//! `storlab lab`: real servers (nfs-ganesha, tgtd, nbdkit) in a storage-host
//! namespace, probed with Debian's clients. Needs root and the packages
//! ./setup.sh installs. Tests run one at a time; a guard always runs `lab down`.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
use support::lab::LabGuard;
use support::{pid_alive, text};

static SERIAL: Mutex<()> = Mutex::new(());

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_storlab")
}

/// The lab needs root and the `lab` command: fail (never skip) without them.
fn can_run() -> bool {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the lab tests need root (network namespaces)"
    );
    let wired = Command::new(bin())
        .args(["lab", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(wired, "this storlab binary has no `lab` command");
    true
}

impl LabGuard {
    fn up(&self, extra: &[&str]) -> Output {
        let mut args = vec!["up", "--size", "32m"];
        args.extend_from_slice(extra);
        self.lab(&args)
    }
}

fn ok(o: Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn pids(state: &serde_json::Value) -> Vec<(String, u64)> {
    state["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["pid"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn storlab_netns() -> Vec<String> {
    let out = run("ip", &["netns", "list"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("storlab"))
        .map(String::from)
        .collect()
}

/// Our nfs://ADDR:PORT/PATH?version=V as libnfs wants it: port as a parameter.
fn libnfs_url(url: &str) -> String {
    let rest = url.strip_prefix("nfs://").unwrap();
    let (hostport, tail) = rest.split_once('/').unwrap();
    let (host, port) = hostport.split_once(':').unwrap();
    format!("nfs://{host}/{tail}&nfsport={port}")
}

/// After `down`: no PID, namespace, backing file or state left.
fn assert_all_gone(state: &serde_json::Value, dir: &Path) {
    for (name, pid) in pids(state) {
        assert!(
            !pid_alive(pid),
            "{name} (pid {pid}) still runs after lab down"
        );
    }
    let ns = state["netns"]["name"].as_str().unwrap();
    assert!(
        !storlab_netns().iter().any(|n| n == ns),
        "namespace {ns} left behind"
    );
    let host_if = state["netns"]["host_if"].as_str().unwrap();
    assert!(
        !Path::new("/sys/class/net").join(host_if).exists(),
        "veth {host_if} left behind"
    );
    let backing = state["backing"]["path"].as_str().unwrap();
    assert!(
        !Path::new(backing).exists(),
        "backing file {backing} left behind"
    );
    assert!(!dir.exists(), "state dir {} left behind", dir.display());
}

#[test]
fn lab_serves_every_protocol_and_cleans_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let lab = LabGuard::new("labtest-main");
    let out = ok(lab.up(&[]), "lab up");
    for name in ["local", "nfs3", "nfs4", "iscsi", "nbd"] {
        assert!(
            out.contains(&format!("  {name} ")),
            "lab up output lacks {name}: {out}"
        );
    }
    let status = ok(lab.lab(&["status"]), "lab status");
    assert_eq!(status.matches("running").count(), 4, "{status}");
    let st = lab.state();
    let t = &st["targets"];
    for name in ["local", "nfs3", "nfs4", "iscsi", "nbd"] {
        assert!(t[name].is_string(), "target {name} missing: {st}");
    }
    assert!(
        t["nfs3"]
            .as_str()
            .unwrap()
            .ends_with("/storlab/disk.img?version=3")
    );
    let size = st["backing"]["size"].as_u64().unwrap();
    assert_eq!(size, 32 << 20);
    for s in st["servers"].as_array().unwrap() {
        assert_ne!(s["version"], "unknown", "{s}");
    }

    // A real client of each server.
    let nbd = t["nbd"].as_str().unwrap();
    let info = ok(
        run("qemu-img", &["info", "--output=json", nbd]),
        "qemu-img info over NBD",
    );
    assert!(
        info.contains(&format!("\"virtual-size\": {size}")),
        "{info}"
    );
    let inq = ok(
        run("iscsi-inq", &[t["iscsi"].as_str().unwrap()]),
        "iscsi-inq",
    );
    assert!(inq.contains("DIRECT_ACCESS"), "{inq}");
    for v in ["nfs3", "nfs4"] {
        let url = libnfs_url(t[v].as_str().unwrap()).replace("disk.img?", "?");
        let ls = ok(run("nfs-ls", &[&url]), &format!("nfs-ls {url}"));
        assert!(
            ls.contains("disk.img") && ls.contains(&size.to_string()),
            "{ls}"
        );
    }

    // Written over NBD, read back over NFSv3 and from the backing file.
    let backing = t["local"]
        .as_str()
        .unwrap()
        .strip_prefix("file:")
        .unwrap()
        .to_string();
    let before = std::fs::read(&backing).unwrap();
    assert!(
        before[..1 << 20].iter().any(|&b| b != 0),
        "the backing store is filled, not zeros"
    );
    ok(
        run("qemu-io", &["-f", "raw", "-c", "write -P 0x5a 1M 64k", nbd]),
        "qemu-io write over NBD",
    );
    let nfs3 = libnfs_url(t["nfs3"].as_str().unwrap());
    let cat = run("nfs-cat", &[&nfs3]);
    assert!(cat.status.success(), "nfs-cat: {}", text(&cat));
    assert_eq!(cat.stdout.len() as u64, size);
    assert!(
        cat.stdout[1 << 20..(1 << 20) + 65536]
            .iter()
            .all(|&b| b == 0x5a),
        "NBD write not seen over NFSv3"
    );
    assert!(
        cat.stdout[..1 << 20] == before[..1 << 20],
        "bytes before the write changed"
    );
    let local = std::fs::read(&backing).unwrap();
    assert_eq!(local[1 << 20], 0x5a);

    // A second `up` refuses.
    let again = lab.up(&[]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("already up"), "{}", text(&again));

    ok(lab.lab(&["down"]), "lab down");
    assert_all_gone(&st, &lab.dir);
    ok(lab.lab(&["down"]), "second lab down");
}

#[test]
fn down_cleans_up_after_killed_servers() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let lab = LabGuard::new("labtest-kill");
    ok(lab.up(&[]), "lab up");
    let st = lab.state();
    for (name, pid) in pids(&st) {
        if name == "tgtd" || name == "ganesha" {
            // SAFETY: a PID the lab just recorded and reported running.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
    for (name, pid) in pids(&st) {
        if name == "tgtd" || name == "ganesha" {
            let start = std::time::Instant::now();
            while pid_alive(pid) && start.elapsed().as_secs() < 10 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
    // Zombies not yet reaped by init count as dead.
    let status = lab.lab(&["status"]);
    assert_eq!(
        status.status.code(),
        Some(1),
        "status of a broken lab: {}",
        text(&status)
    );
    assert!(text(&status).contains("DEAD"), "{}", text(&status));
    ok(lab.lab(&["down"]), "lab down after SIGKILL");
    assert_all_gone(&st, &lab.dir);
}

#[test]
fn failed_up_tears_down_what_it_made() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let before = storlab_netns();
    let lab = LabGuard::new("labtest-fail");
    // The namespace is made, then the backing directory is found missing.
    let out = lab.up(&[
        "--backing",
        "disk",
        "--backing-dir",
        "/nonexistent-storlab-dir",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("/nonexistent-storlab-dir"),
        "{}",
        text(&out)
    );
    assert_eq!(
        storlab_netns(),
        before,
        "namespace left behind by a failed up"
    );
    assert!(!lab.dir.exists(), "state dir left behind by a failed up");

    let out = lab.up(&["--nfs-port", "13260"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("port 13260"), "{}", text(&out));
}
