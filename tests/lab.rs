//! `storlab lab`: real servers (nfs-ganesha, tgtd, nbdkit) on 127.0.0.1 (the
//! default, `--net loopback`) with rpcbind contained in the lab's namespace,
//! probed with Debian's clients and storlab's own backends. Needs root and the
//! packages ./setup.sh installs. Tests run one at a time; a guard always runs
//! `lab down`. Every lab here gets ports free at that moment, so it never
//! meets another test's loopback lab.

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
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "the lab tests need root (network namespaces)");
    let wired = Command::new(bin())
        .args(["lab", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(wired, "this storlab binary has no `lab` command");
    true
}

/// The port options of `lab up`.
const PORT_OPTS: [&str; 4] = ["--nfs-port", "--mountd-port", "--iscsi-port", "--nbd-port"];

/// Four ports free on 127.0.0.1 (see [`support::free_port`]).
fn free_ports() -> Vec<u16> {
    (0..4).map(|_| support::free_port()).collect()
}

impl LabGuard {
    /// `lab up --size 32m EXTRA`, with free ports for every port option EXTRA does not give.
    fn up(&self, extra: &[&str]) -> Output {
        let mut args: Vec<String> = ["up", "--size", "32m"].map(String::from).to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        if !extra.contains(&"--media") {
            args.extend(["--media".to_string(), "ram".to_string()]);
        }
        for (opt, port) in PORT_OPTS.iter().zip(free_ports()) {
            if !extra.contains(opt) {
                args.extend([opt.to_string(), port.to_string()]);
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.lab(&refs)
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
    // Four servers and the media server.
    assert_eq!(status.matches("running").count(), 5, "{status}");
    let st = lab.state();
    let t = &st["targets"];
    for name in ["local", "nfs3", "nfs4", "iscsi", "nbd"] {
        assert!(t[name].is_string(), "target {name} missing: {st}");
    }
    let nfs3_url = t["nfs3"].as_str().unwrap();
    assert!(
        nfs3_url.contains("/storlab/disk.img?version=3&mountport="),
        "{nfs3_url}"
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

    let out = lab.up(&["--nfs-port", "13260", "--iscsi-port", "13260"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("port 13260"), "{}", text(&out));
}

/// The namespace link of `pid` (`/proc/PID/ns/KIND`), e.g. `net:[4026531840]`.
fn ns_of(pid: u64, kind: &str) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))
        .map(|l| l.display().to_string())
        .unwrap_or_else(|e| panic!("/proc/{pid}/ns/{kind}: {e}"))
}

/// Local addresses of the TCP sockets listening on `port` in this (the root)
/// network namespace, from /proc/net/tcp and tcp6 (IPv4-mapped shown as IPv4).
fn listening_on(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (addr, p) = f[1].split_once(':').unwrap();
            if f[3] == "0A" && u16::from_str_radix(p, 16).unwrap() == port {
                out.push(storlab::lab::net::proc_addr(addr, v6));
            }
        }
    }
    out
}

/// Interface names of `ip -o link` (in namespace `netns` when given), without `@peer`.
fn links(netns: Option<&str>) -> Vec<String> {
    let mut args = vec!["-o", "link"];
    if let Some(n) = netns {
        args.splice(0..0, ["-n", n]);
    }
    ok(run("ip", &args), "ip -o link")
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .collect()
}

/// Whether `dev` is one of slot `slot`'s devices (`stlSLOT` then a non-digit).
fn slot_device(dev: &str, slot: u64) -> bool {
    dev.strip_prefix(&format!("stl{slot}"))
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The PIDs of every process in mount namespace `mnt` (as [`ns_of`] shows it).
fn in_mount_ns(mnt: &str) -> Vec<u64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u64>().ok()))
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/mnt"))
                .is_ok_and(|l| l.display().to_string() == mnt)
        })
        .collect()
}

/// A short `storlab run` (random 4k reads and writes) on `url` must do I/O without errors.
fn short_run(url: &str, dir: &Path) {
    let json = dir.join("run.json");
    let out = run(
        bin(),
        &[
            "run",
            "--no-db",
            "-q",
            "--target",
            url,
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--iodepth",
            "4",
            "--size",
            "16m",
            "--ramp_time",
            "0",
            "--runtime",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "storlab run on {url}: {}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let total = &doc["jobs"][0]["points"][0]["summary"]["total"];
    assert!(total["ios"].as_u64().unwrap() > 0, "{url}: no I/O: {total}");
    assert_eq!(total["errors"].as_u64(), Some(0), "{url}: {total}");
}

#[test]
fn the_default_lab_serves_on_loopback_with_rpcbind_contained() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let lab = LabGuard::new("labtest-loopback");
    let work = std::env::temp_dir().join(format!("storlab-labtest-lo-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let out = ok(lab.up(&[]), "lab up (no --net)");
    assert!(out.contains("network: loopback"), "{out}");
    let st = lab.state();
    assert_eq!(st["net"], "loopback", "{st}");
    let server = |name: &str| -> serde_json::Value {
        st["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {st}"))
            .clone()
    };

    // ganesha, tgtd and nbdkit listen on 127.0.0.1 of the root namespace
    // only; nothing listens on any other address of their ports.
    let mut ports = Vec::new();
    for name in ["ganesha", "tgtd", "nbdkit"] {
        let s = server(name);
        assert_eq!(s["addr"], "127.0.0.1", "{s}");
        for p in s["ports"].as_array().unwrap() {
            ports.push(p.as_u64().unwrap() as u16);
        }
    }
    assert_eq!(ports.len(), 4);
    for port in &ports {
        let addrs = listening_on(*port);
        assert!(
            !addrs.is_empty() && addrs.iter().all(|a| a == "127.0.0.1"),
            "port {port} listens on {addrs:?}, not on 127.0.0.1 alone"
        );
    }
    // ganesha serves NFS and MOUNT over UDP as well, on 127.0.0.1 alone.
    for port in &ports[..2] {
        let udp = storlab::lab::net::udp_sockets(*port);
        assert!(
            !udp.is_empty() && udp.iter().all(|(a, _)| a == &format!("127.0.0.1:{port}")),
            "UDP port {port}: {udp:?}"
        );
    }
    for (name, url) in st["targets"].as_object().unwrap() {
        let url = url.as_str().unwrap();
        // The local and block targets are paths on this host.
        if name != "local" && name != "block" {
            assert!(url.contains("://127.0.0.1:"), "{name}: {url}");
        }
    }
    let nfs3 = st["targets"]["nfs3"].as_str().unwrap();
    assert!(
        nfs3.ends_with(&format!("?version=3&mountport={}", ports[1])),
        "{nfs3}"
    );

    // rpcbind alone is in the lab's network namespace; every server shares
    // its mount namespace (private /run), whose tgtd socket and rpcbind
    // socket the root namespace does not see.
    let me = std::process::id() as u64;
    let anchor = server("rpcbind")["pid"].as_u64().unwrap();
    let mnt = ns_of(anchor, "mnt");
    // Held open to the end: the kernel gives a freed namespace's number to the
    // next one made (another test's lab), and `in_mount_ns` goes by number.
    let _mnt_held = std::fs::File::open(format!("/proc/{anchor}/ns/mnt")).unwrap();
    assert_ne!(
        ns_of(anchor, "net"),
        ns_of(me, "net"),
        "rpcbind is contained"
    );
    assert_ne!(mnt, ns_of(me, "mnt"), "the lab has its own mount namespace");
    for name in ["ganesha", "tgtd", "nbdkit"] {
        let pid = server(name)["pid"].as_u64().unwrap();
        assert_eq!(
            ns_of(pid, "net"),
            ns_of(me, "net"),
            "{name} in the root netns"
        );
        assert_eq!(
            ns_of(pid, "mnt"),
            mnt,
            "{name} in the lab's mount namespace"
        );
    }
    let inside = ok(
        run(
            "nsenter",
            &[
                "-t",
                &anchor.to_string(),
                "-m",
                "--",
                "stat",
                "-c",
                "%d:%i",
                "/run",
                "/run/rpcbind.sock",
                "/run/tgtd/socket.0",
            ],
        ),
        "stat inside the lab's mount namespace",
    );
    let lines: Vec<&str> = inside.lines().collect();
    assert_eq!(lines.len(), 3, "{inside}");
    let root_run = ok(run("stat", &["-c", "%d:%i", "/run"]), "stat /run");
    assert_ne!(lines[0], root_run.trim(), "/run inside is not the root's");
    for (i, f) in [(1, "/run/rpcbind.sock"), (2, "/run/tgtd/socket.0")] {
        let o = run("stat", &["-c", "%d:%i", f]);
        assert!(
            !o.status.success() || String::from_utf8_lossy(&o.stdout).trim() != lines[i],
            "{f} of the lab is visible in the root mount namespace"
        );
    }
    // ganesha registered NFSv3 and MOUNT through /run/rpcbind.sock.
    let rpc = ok(
        run(
            "nsenter",
            &["-t", &anchor.to_string(), "-m", "--", "rpcinfo", "-p"],
        ),
        "rpcinfo -p over rpcbind's socket",
    );
    assert!(rpc.contains("mountd") && rpc.contains("nfs"), "{rpc}");

    // No veth: the root namespace has none of the lab's devices or
    // addresses, and the lab's namespace has only its own lo (up).
    let ns = st["netns"]["name"].as_str().unwrap();
    let slot = st["netns"]["slot"].as_u64().unwrap();
    assert_eq!(st["netns"]["veth"], false, "{st}");
    let root_links = links(None);
    assert!(
        !root_links.iter().any(|d| slot_device(d, slot)),
        "a device of slot {slot} in the root namespace: {root_links:?}"
    );
    let root_addrs = ok(run("ip", &["-o", "-4", "addr", "show"]), "ip addr");
    assert!(
        !root_addrs.contains(&format!(" 10.99.{slot}.")),
        "{root_addrs}"
    );
    assert_eq!(links(Some(ns)), ["lo"], "devices of {ns}");
    let lo = ok(
        run("ip", &["-n", ns, "-o", "link", "show", "lo"]),
        "ip link lo",
    );
    assert!(lo.contains(",UP"), "lo of {ns} is down: {lo}");
    assert_eq!(server("rpcbind")["addr"], "127.0.0.1");
    let status = ok(lab.lab(&["status"]), "lab status");
    assert!(
        status.contains(&format!("rpcbind: contained in netns {ns} (only lo")),
        "{status}"
    );
    // The lab holds its slot in the registry while up.
    let rec = Path::new("/var/lib/storlab/labs").join(slot.to_string());
    let recorded = std::fs::read_to_string(&rec).unwrap_or_default();
    assert_eq!(Path::new(recorded.trim()), lab.dir, "{}", rec.display());

    // I/O through 127.0.0.1 with storlab's own backends.
    for name in ["nfs3", "nfs4", "iscsi", "nbd"] {
        short_run(st["targets"][name].as_str().unwrap(), &work);
    }

    // Each server restarts on loopback and serves again.
    for name in ["ganesha", "tgtd", "nbdkit"] {
        ok(lab.lab(&["restart", name]), &format!("lab restart {name}"));
    }
    let st2 = lab.state();
    for port in &ports {
        let addrs = listening_on(*port);
        assert!(
            !addrs.is_empty() && addrs.iter().all(|a| a == "127.0.0.1"),
            "after restart, port {port} listens on {addrs:?}"
        );
    }
    short_run(nfs3, &work);
    short_run(st["targets"]["iscsi"].as_str().unwrap(), &work);

    // A second lab on the same ports is refused, naming the port and its holder.
    let other = LabGuard::new("labtest-loopback-2");
    let port_args: Vec<String> = PORT_OPTS
        .iter()
        .zip(&ports)
        .flat_map(|(o, p)| [o.to_string(), p.to_string()])
        .collect();
    let refs: Vec<&str> = port_args.iter().map(String::as_str).collect();
    let clash = other.up(&refs);
    assert_eq!(clash.status.code(), Some(2), "{}", text(&clash));
    let msg = text(&clash);
    assert!(
        msg.contains(&format!(
            "port {} for ganesha (NFS) is already in use",
            ports[0]
        )) && msg.contains("ganesha.nfsd")
            && msg.contains(&format!("127.0.0.1:{}", ports[0])),
        "{msg}"
    );
    assert!(!other.dir.exists(), "a refused up leaves no state");
    // ganesha serves NFS over UDP too: a UDP socket on the NFS port is a clash.
    // (a port whose TCP side is free, so the UDP check is what refuses it)
    let udp = std::iter::repeat_with(|| std::net::UdpSocket::bind(("127.0.0.1", 0)).unwrap())
        .take(20)
        .find(|u| {
            std::net::TcpListener::bind(("127.0.0.1", u.local_addr().unwrap().port())).is_ok()
        })
        .expect("a UDP port whose TCP port is free");
    let udp_port = udp.local_addr().unwrap().port().to_string();
    let clash = other.up(&["--nfs-port", &udp_port]);
    assert_eq!(clash.status.code(), Some(2), "{}", text(&clash));
    let msg = text(&clash);
    assert!(
        msg.contains(&format!(
            "port {udp_port} for ganesha (NFS) is already in use"
        )) && msg.contains(&format!("pid {}", std::process::id()))
            && msg.contains(&format!("UDP 127.0.0.1:{udp_port}")),
        "{msg}"
    );
    assert!(!other.dir.exists(), "a refused up leaves no state");
    drop(udp);
    // --hosts needs the namespace.
    let bad = other.up(&["--hosts", "1", "--net", "loopback"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        text(&bad).contains("--hosts") && text(&bad).contains("loopback, netns"),
        "{}",
        text(&bad)
    );

    // down: no process, namespace, mount namespace (with its /run tmpfs) or port left.
    ok(lab.lab(&["down"]), "lab down");
    let mut all = pids(&st);
    all.extend(pids(&st2));
    for (name, pid) in all {
        assert!(
            !pid_alive(pid),
            "{name} (pid {pid}) still runs after lab down"
        );
    }
    assert_eq!(
        in_mount_ns(&mnt),
        Vec::<u64>::new(),
        "processes left in {mnt}"
    );
    for port in &ports {
        assert!(listening_on(*port).is_empty(), "port {port} still listens");
    }
    assert_all_gone(&st, &lab.dir);
    let recorded = std::fs::read_to_string(&rec).unwrap_or_default();
    assert_ne!(
        Path::new(recorded.trim()),
        lab.dir,
        "{} kept",
        rec.display()
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A slot whose backing directory an earlier lab left behind (killed before
/// its `lab down`) is skipped: `lab up` takes another slot and leaves the
/// leftover directory and its file as they were.
#[test]
fn a_slot_with_a_leftover_backing_store_is_skipped_and_kept() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // The lowest slot with no namespace and no backing directory: the one
    // `lab up` would take.
    let slot = (0..=255u8)
        .find(|s| {
            !Path::new(&format!("/run/netns/storlab{s}")).exists()
                && !Path::new(&format!("/dev/shm/storlab-lab{s}")).exists()
        })
        .expect("a free slot");
    let leftover = std::path::PathBuf::from(format!("/dev/shm/storlab-lab{slot}"));
    std::fs::create_dir(&leftover).unwrap();
    let marker = leftover.join("left-by-a-killed-lab");
    std::fs::write(&marker, b"keep me").unwrap();
    let lab = LabGuard::new("labtest-leftover");
    let out = lab.up(&[]);
    let st = lab.state();
    drop(lab);
    let kept = std::fs::read(&marker).ok();
    let _ = std::fs::remove_dir_all(&leftover);
    ok(out, "lab up beside a leftover backing store");
    let took = st["netns"]["slot"].as_u64().expect("the lab's slot");
    assert_ne!(
        took, slot as u64,
        "lab up took the slot of the leftover store"
    );
    assert_eq!(
        kept.as_deref(),
        Some(&b"keep me"[..]),
        "the leftover was touched"
    );
}
