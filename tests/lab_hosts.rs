//! `storlab lab up --hosts N --link RATE --mtu M`: load-generator host
//! namespaces on a bridge, shaped links, one agent per host. Needs root and the
//! packages ./setup.sh installs. Tests run one at a time; a guard always runs
//! `lab down`.

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

/// Root, `ip` and `tc` are needed: fail (never skip) without them.
fn need_root_and_tools() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "the lab tests need root (network namespaces, tc); run them as root after ./setup.sh"
    );
    for tool in ["ip", "tc"] {
        let found = Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} (Debian package iproute2) not found: run ./setup.sh"
        );
    }
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed (run ./setup.sh if a package is missing): {}",
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (run ./setup.sh)"))
}

fn netns_list() -> Vec<String> {
    let out = run("ip", &["netns", "list"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// The agents' ADDR:PORTs and the token file from `lab status --json`.
fn agents(st: &serde_json::Value) -> (Vec<String>, String) {
    let hosts: Vec<String> = st["hosts"]
        .as_array()
        .expect("hosts in status --json")
        .iter()
        .map(|h| h["agent"].as_str().expect("agent ADDR:PORT").to_string())
        .collect();
    let token = st["token_file"].as_str().expect("token_file").to_string();
    (hosts, token)
}

/// `ip -o link show` inside `netns` (None: root): (name, mtu) of every interface but lo.
fn mtus(netns: Option<&str>) -> Vec<(String, u32)> {
    let mut args = vec![];
    if let Some(n) = netns {
        args.extend(["-n", n]);
    }
    args.extend(["-o", "link", "show"]);
    let out = ok(run("ip", &args), "ip link show");
    out.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.nth(1)?.trim_end_matches(':');
            let name = name.split('@').next()?.to_string();
            let words: Vec<&str> = l.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "mtu")?;
            Some((name, words[i + 1].parse().ok()?))
        })
        .filter(|(n, _)| n != "lo")
        .collect()
}

/// A UDP socket with the don't-fragment bit on every datagram.
fn udp_df(addr: std::net::Ipv4Addr) -> std::net::UdpSocket {
    use std::os::fd::AsRawFd;
    let sock = std::net::UdpSocket::bind((addr, 0)).expect("bind UDP");
    let on: libc::c_int = libc::IP_PMTUDISC_DO;
    // SAFETY: setsockopt on a socket we own with a c_int option value.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "IP_MTU_DISCOVER: {}",
        std::io::Error::last_os_error()
    );
    sock.set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    sock
}

/// Send 8972 bytes (a 9000-byte IP packet) with DF from the root namespace to
/// a socket in host namespace `netns` at `addr`, which echoes it back.
fn udp_echo_9000(netns: &str, addr: std::net::Ipv4Addr, root_addr: std::net::Ipv4Addr) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(Path::new("/run/netns").join(netns)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let echo = std::thread::spawn(move || {
        // SAFETY: setns on a valid namespace fd, moving this thread only.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let sock = udp_df(addr);
        tx.send(sock.local_addr().unwrap()).unwrap();
        let mut buf = vec![0u8; 65536];
        let (n, from) = sock
            .recv_from(&mut buf)
            .expect("9000-byte datagram at the host");
        sock.send_to(&buf[..n], from)
            .expect("echo 9000-byte datagram");
        n
    });
    let to = rx.recv().unwrap();
    let sock = udp_df(root_addr);
    let sent = vec![0x5au8; 8972];
    sock.send_to(&sent, to)
        .expect("send 9000-byte datagram with DF");
    let mut buf = vec![0u8; 65536];
    let (n, _) = sock
        .recv_from(&mut buf)
        .unwrap_or_else(|e| panic!("no 9000-byte echo from {netns} ({addr}): {e}"));
    assert_eq!(n, 8972, "echo from {netns}");
    assert_eq!(echo.join().expect("echo thread"), 8972);
}

/// After `down`: no namespace, interface, process or state left.
fn assert_all_gone(st: &serde_json::Value, dir: &Path) {
    for s in st["servers"].as_array().unwrap() {
        let pid = s["pid"].as_u64().unwrap();
        assert!(
            !pid_alive(pid),
            "{} (pid {pid}) still runs after lab down",
            s["name"]
        );
    }
    let ns = st["netns"]["name"].as_str().unwrap();
    let left: Vec<String> = netns_list()
        .into_iter()
        .filter(|n| n == ns || n.starts_with(&format!("{ns}-")))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    let root_if = st["netns"]["host_if"].as_str().unwrap();
    let links = String::from_utf8_lossy(&run("ip", &["-o", "link", "show"]).stdout).into_owned();
    assert!(
        !links.contains(&format!(" {root_if}@")) && !links.contains(&format!(" {root_if}:")),
        "interface {root_if} left behind: {links}"
    );
    for h in st["hosts"].as_array().unwrap() {
        for key in ["port_if", "host_if"] {
            let name = h[key].as_str().unwrap();
            assert!(
                !links.contains(&format!(" {name}")),
                "interface {name} in the root namespace: {links}"
            );
        }
    }
    assert!(!dir.exists(), "state dir {} left behind", dir.display());
}

#[test]
fn hosts_on_a_shaped_1gbe_link_read_nbd_at_link_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    need_root_and_tools();
    let lab = LabGuard::new("labhosts-1gbe");
    let out = ok(
        lab.lab(&[
            "up", "--hosts", "2", "--link", "1gbe", "--size", "256m", "--media", "ram",
        ]),
        "lab up --hosts 2 --link 1gbe",
    );
    assert!(out.contains("hosts:"), "{out}");
    let st = lab.state();
    assert_eq!(st["link"]["rate_bps"], 1_000_000_000u64, "{st}");
    assert_eq!(st["mtu"], 1500, "{st}");
    let (hosts, token) = agents(&st);
    assert_eq!(hosts.len(), 2, "{st}");
    let status = ok(lab.lab(&["status"]), "lab status");
    for a in &hosts {
        assert!(
            status.contains(a.as_str()),
            "status lacks agent {a}: {status}"
        );
    }
    assert!(
        status.contains(&token),
        "status lacks the token file: {status}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "token file {token} mode {mode:o}");
    let ns = st["netns"]["name"].as_str().unwrap().to_string();
    for (i, h) in st["hosts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(h["name"], format!("{ns}-h{}", i + 1));
        assert!(netns_list().contains(&h["name"].as_str().unwrap().to_string()));
    }

    let hosts_arg = hosts.join(",");
    let base = [
        "run",
        "--no-db",
        "--hosts",
        hosts_arg.as_str(),
        "--token-file",
        token.as_str(),
        "--vms",
        "2",
    ];
    // Both agents answer and run.
    let mut args = base.to_vec();
    let null_json = lab.dir.join("null.json");
    args.extend([
        "--target",
        "null:",
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--runtime",
        "2",
        "--json",
        null_json.to_str().unwrap(),
    ]);
    ok(
        run(bin(), &args),
        "storlab run --target null: through the agents",
    );
    // Across the namespaces, the fleet's result is exactly the sum of its hosts'.
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&null_json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&null_json);
    let point = &doc["jobs"][0]["points"][0];
    let hosts_res = point["hosts"].as_array().expect("per-host results");
    assert_eq!(hosts_res.len(), 2, "{point}");
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    for (i, iv) in point["intervals"].as_array().unwrap().iter().enumerate() {
        for dir in ["read", "write"] {
            for field in ["ios", "bytes"] {
                let parts: u64 = hosts_res
                    .iter()
                    .map(|h| n(&h["intervals"][i]["stats"][dir][field]))
                    .sum();
                assert_eq!(
                    n(&iv["stats"][dir][field]),
                    parts,
                    "interval {i} {dir} {field}"
                );
            }
            let parts: u64 = hosts_res
                .iter()
                .map(|h| n(&h["intervals"][i]["stats"][dir]["lat"]["count"]))
                .sum();
            assert_eq!(
                n(&iv["stats"][dir]["lat"]["count"]),
                parts,
                "interval {i} {dir} histogram count"
            );
        }
    }
    let total = n(&point["summary"]["total"]["ios"]);
    assert!(total > 0);
    let hosts_total: u64 = hosts_res
        .iter()
        .map(|h| n(&h["summary"]["total"]["ios"]))
        .sum();
    assert_eq!(total, hosts_total, "fleet total = sum of hosts");
    let mut workers_total = 0;
    for w in point["workers"].as_array().unwrap() {
        for dir in ["read", "write"] {
            let ios = n(&w["stats"][dir]["ios"]);
            // Per-worker histograms come whole at the end of the run.
            assert_eq!(n(&w["stats"][dir]["lat"]["count"]), ios, "worker {w}");
            workers_total += ios;
        }
    }
    assert_eq!(
        workers_total, total,
        "per-worker totals add up to the fleet's"
    );

    // 64k sequential read over NBD: each host is held to its 1 Gbit/s link.
    let nbd = st["targets"]["nbd"].as_str().unwrap().to_string();
    let json = lab.dir.join("nbd.json");
    let mut args = base.to_vec();
    args.extend([
        "--target",
        nbd.as_str(),
        "--rw",
        "read",
        "--bs",
        "64k",
        "--iodepth",
        "8",
        "--runtime",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(run(bin(), &args), "storlab run over NBD through the agents");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("run JSON");
    let _ = std::fs::remove_file(&json);
    let point = &doc["jobs"][0]["points"][0];
    let per_host: Vec<f64> = point["hosts"]
        .as_array()
        .expect("per-host results")
        .iter()
        .map(|h| h["summary"]["read"]["mb_s"].as_f64().unwrap())
        .collect();
    assert_eq!(per_host.len(), 2, "{point}");
    let link_mb_s = 125.0;
    let sum: f64 = per_host.iter().sum();
    assert!(
        sum <= 2.0 * link_mb_s * 1.05,
        "{sum:.1} MB/s over two 1 Gbit/s links: not shaped ({per_host:?})"
    );
    for (i, mb_s) in per_host.iter().enumerate() {
        assert!(
            *mb_s <= link_mb_s * 1.05,
            "host {i}: {mb_s:.1} MB/s over a 1 Gbit/s link"
        );
        assert!(
            *mb_s > link_mb_s * 0.5,
            "host {i}: only {mb_s:.1} MB/s of a 125 MB/s link ({per_host:?})"
        );
    }

    ok(lab.lab(&["down"]), "lab down");
    assert_all_gone(&st, &lab.dir);
    ok(lab.lab(&["down"]), "second lab down");
}

#[test]
fn mtu_9000_on_every_interface_of_the_path() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    need_root_and_tools();
    let lab = LabGuard::new("labhosts-mtu");
    ok(
        lab.lab(&[
            "up", "--hosts", "2", "--link", "10gbe", "--mtu", "9000", "--size", "32m", "--media",
            "ram",
        ]),
        "lab up --mtu 9000",
    );
    let st = lab.state();
    assert_eq!(st["mtu"], 9000, "{st}");
    assert_eq!(st["link"]["rate_bps"], 10_000_000_000u64, "{st}");
    let ns = st["netns"]["name"].as_str().unwrap().to_string();
    let root_if = st["netns"]["host_if"].as_str().unwrap().to_string();

    // Root end, every interface of the storage namespace, every host end.
    let mut seen: Vec<(String, String, u32)> = mtus(None)
        .into_iter()
        .filter(|(n, _)| *n == root_if)
        .map(|(n, m)| ("root".to_string(), n, m))
        .collect();
    assert_eq!(seen.len(), 1, "root veth {root_if} not found");
    let storage = mtus(Some(&ns));
    assert_eq!(
        storage.len(),
        4,
        "storage ns: veth, bridge, 2 ports: {storage:?}"
    );
    seen.extend(storage.into_iter().map(|(n, m)| (ns.clone(), n, m)));
    for h in st["hosts"].as_array().unwrap() {
        let name = h["name"].as_str().unwrap();
        let ifs = mtus(Some(name));
        assert_eq!(ifs.len(), 1, "{name}: {ifs:?}");
        seen.extend(ifs.into_iter().map(|(n, m)| (name.to_string(), n, m)));
    }
    for (netns, dev, mtu) in &seen {
        assert_eq!(*mtu, 9000, "{dev} in {netns} has MTU {mtu}");
    }

    // Every veth end is shaped at 10 Gbit/s, tbf's rate scaled by 9014/9038 so
    // a full frame takes a real one's line time (the bridge is not a link).
    let bridge = st["bridge"].as_str().unwrap();
    for (netns, dev, _) in seen.iter().filter(|(_, d, _)| d != bridge) {
        let mut args = vec![];
        if netns != "root" {
            args.extend(["-n", netns.as_str()]);
        }
        args.extend(["qdisc", "show", "dev", dev.as_str()]);
        let q = ok(run("tc", &args), "tc qdisc show");
        assert!(
            q.contains("tbf") && q.contains("rate 9973Mbit"),
            "{dev} in {netns}: {q}"
        );
    }

    // A 9000-byte frame (8972 bytes of UDP, DF set) crosses the whole path,
    // root namespace to each host and back, without fragmenting.
    let root_addr: std::net::Ipv4Addr = st["netns"]["host_addr"].as_str().unwrap().parse().unwrap();
    for h in st["hosts"].as_array().unwrap() {
        let name = h["name"].as_str().unwrap();
        let addr: std::net::Ipv4Addr = h["addr"].as_str().unwrap().parse().unwrap();
        udp_echo_9000(name, addr, root_addr);
    }

    ok(lab.lab(&["down"]), "lab down");
    assert_all_gone(&st, &lab.dir);
}

#[test]
fn down_after_a_crash_removes_unrecorded_hosts() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    need_root_and_tools();
    let lab = LabGuard::new("labhosts-crash");
    ok(
        lab.lab(&["up", "--hosts", "1", "--size", "16m", "--media", "ram"]),
        "lab up --hosts 1",
    );
    let st = lab.state();
    let ns = st["netns"]["name"].as_str().unwrap().to_string();
    // As if `up` had crashed after `ip netns add` but before recording host 2,
    // with a process left inside it.
    let stray = format!("{ns}-h2");
    ok(run("ip", &["netns", "add", &stray]), "ip netns add");
    let sleeper = Command::new("ip")
        .args(["netns", "exec", &stray, "sleep", "300"])
        .spawn()
        .expect("sleep in the stray namespace");
    let sleeper_pid = sleeper.id() as u64;
    // And the agent killed by a crash of its own.
    let agent = st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "agent-h1")
        .expect("agent-h1 recorded")["pid"]
        .as_u64()
        .unwrap();
    // SAFETY: a PID the lab just recorded and reported running.
    unsafe { libc::kill(agent as i32, libc::SIGKILL) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pid_alive(agent) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = lab.lab(&["status"]);
    assert_eq!(status.status.code(), Some(1), "{}", text(&status));

    ok(lab.lab(&["down"]), "lab down after a crash");
    let mut sleeper = sleeper;
    let _ = sleeper.wait();
    assert!(!pid_alive(sleeper_pid), "process in {stray} left running");
    assert!(
        !netns_list().contains(&stray),
        "unrecorded host namespace {stray} left behind"
    );
    assert_all_gone(&st, &lab.dir);
    ok(lab.lab(&["down"]), "second lab down");
}
