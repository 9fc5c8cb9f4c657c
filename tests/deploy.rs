//! `storlab fleet deploy|status|stop` for real, and the Kubernetes recipe
//! checked offline.
//!
//! The deploy test needs root (it is a lab test: network namespaces) and the
//! packages ./setup.sh installs: a lab with 4 bare host namespaces (`lab up
//! --hosts 4 --no-agents`), Debian's sshd in each (its own config, host key
//! and authorized_keys in the test's directory, port 2222 inside the
//! namespace, started and stopped by PID here), then the agents deployed,
//! run against and stopped through those sshds. Every server, process and
//! namespace it makes is checked gone at its end; guards undo them on a
//! failure.

mod support;

use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use storlab::process::{self, Proc};
use support::lab::Lab;
use support::{storlab, text};

/// sshd's port inside each host namespace.
const SSH_PORT: u16 = 2222;
/// The deployed agents' port.
const AGENT_PORT: u16 = 7900;

fn ok(o: Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (run ./setup.sh)"))
}

/// PIDs in network namespace `name`.
fn netns_pids(name: &str) -> Vec<u32> {
    let o = run("ip", &["netns", "pids", name]);
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The network namespace inode of `pid`, and of the named namespace.
fn netns_of(pid: u32) -> Option<u64> {
    std::fs::metadata(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|m| m.ino())
}

fn netns_inode(name: &str) -> u64 {
    std::fs::metadata(Path::new("/run/netns").join(name))
        .unwrap()
        .ino()
}

/// Wait until `f` holds, up to `secs`; false if it never did.
fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One host namespace of the lab, with its sshd.
struct SshHost {
    netns: String,
    addr: String,
}

/// The ssh material of the test: a client key, one host key and config per
/// host, the client's config with the known host keys.
struct SshFiles {
    dir: PathBuf,
    client_config: PathBuf,
}

fn keygen(path: &Path) -> String {
    ok(
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "storlab-test",
                "-f",
                path.to_str().unwrap(),
            ],
        ),
        "ssh-keygen (Debian package openssh-client)",
    );
    std::fs::read_to_string(path.with_extension("pub")).unwrap()
}

impl SshFiles {
    fn new(dir: PathBuf, hosts: &[SshHost]) -> SshFiles {
        std::fs::create_dir_all(&dir).unwrap();
        let client = dir.join("client_key");
        let public = keygen(&client);
        std::fs::write(dir.join("authorized_keys"), &public).unwrap();
        let mut known = String::new();
        for (k, h) in hosts.iter().enumerate() {
            let key = dir.join(format!("host{k}_key"));
            let public = keygen(&key);
            let mut words = public.split_whitespace();
            let (kind, blob) = (words.next().unwrap(), words.next().unwrap());
            known.push_str(&format!("[{}]:{SSH_PORT} {kind} {blob}\n", h.addr));
            let config = format!(
                "Port {SSH_PORT}\nListenAddress {addr}\nHostKey {key}\nPidFile {dir}/sshd{k}.pid\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
                 AllowUsers root\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nAllowTcpForwarding no\nAllowAgentForwarding no\n\
                 X11Forwarding no\nPermitTunnel no\nPrintMotd no\nLogLevel VERBOSE\n",
                addr = h.addr,
                key = key.display(),
                dir = dir.display(),
            );
            std::fs::write(dir.join(format!("sshd{k}.conf")), config).unwrap();
        }
        std::fs::write(dir.join("known_hosts"), known).unwrap();
        let client_config = dir.join("ssh_config");
        std::fs::write(
            &client_config,
            format!(
                "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
                 GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                client.display(),
                dir.join("known_hosts").display()
            ),
        )
        .unwrap();
        SshFiles { dir, client_config }
    }
}

/// sshd needs its privilege separation directory, which only its package's
/// service creates; made here when missing, removed again on drop.
struct PrivsepDir {
    made: bool,
}

impl PrivsepDir {
    fn ensure() -> PrivsepDir {
        let p = Path::new("/run/sshd");
        let made = !p.exists();
        if made {
            std::fs::create_dir(p).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        PrivsepDir { made }
    }
}

impl Drop for PrivsepDir {
    fn drop(&mut self) {
        if self.made {
            let _ = std::fs::remove_dir(Path::new("/run/sshd"));
        }
    }
}

/// One sshd per host namespace, stopped by PID on drop.
struct Sshds(Vec<Proc>);

impl Sshds {
    fn start(files: &SshFiles, hosts: &[SshHost]) -> Sshds {
        assert!(
            Path::new("/usr/sbin/sshd").exists(),
            "/usr/sbin/sshd not found (Debian package openssh-server): run ./setup.sh"
        );
        let mut procs = Sshds(Vec::new());
        for (k, h) in hosts.iter().enumerate() {
            let conf = files.dir.join(format!("sshd{k}.conf"));
            ok(
                run("/usr/sbin/sshd", &["-t", "-f", conf.to_str().unwrap()]),
                "sshd -t (its config)",
            );
            let args: Vec<String> = vec![
                format!("--net=/run/netns/{}", h.netns),
                "--".into(),
                "/usr/sbin/sshd".into(),
                "-D".into(),
                "-e".into(),
                "-f".into(),
                conf.display().to_string(),
            ];
            let log = files.dir.join(format!("sshd{k}.log"));
            let p = process::spawn(Path::new("nsenter"), &args, &log).unwrap();
            procs.0.push(p.clone());
            let addr: SocketAddr = format!("{}:{SSH_PORT}", h.addr).parse().unwrap();
            let banner = eventually(15, || {
                use std::io::Read;
                let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500))
                else {
                    return false;
                };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut b = [0u8; 8];
                s.read_exact(&mut b).is_ok() && &b == b"SSH-2.0-"
            });
            assert!(
                banner,
                "sshd in {} did not answer on {addr}: {}",
                h.netns,
                p.log_tail(10)
            );
            assert_eq!(
                netns_of(p.pid),
                Some(netns_inode(&h.netns)),
                "sshd runs in {}",
                h.netns
            );
        }
        procs
    }

    fn stop(&mut self) {
        for p in self.0.drain(..) {
            assert!(
                p.stop(Duration::from_secs(5)),
                "sshd pid {} did not stop",
                p.pid
            );
        }
    }
}

impl Drop for Sshds {
    fn drop(&mut self) {
        for p in &self.0 {
            p.stop(Duration::from_secs(5));
        }
    }
}

/// Stops whatever fleet is still recorded in `dir` on drop (a failed test).
struct FleetGuard(PathBuf);

impl Drop for FleetGuard {
    fn drop(&mut self) {
        if self.0.join("fleet.json").exists() {
            let o = storlab()
                .args(["fleet", "stop", "--dir"])
                .arg(&self.0)
                .output()
                .unwrap();
            eprintln!("fleet stop in the guard: {}", text(&o));
        }
    }
}

/// An agent of an older protocol version, listening at `addr` inside host
/// namespace `netns` (a stale agent left running on a host): it answers every
/// request as such an agent does, HTTP 409 naming both versions.
struct OldAgent {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl OldAgent {
    fn start(netns: &str, addr: SocketAddr) -> OldAgent {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let ns = std::fs::File::open(Path::new("/run/netns").join(netns)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // SAFETY: setns on a valid namespace fd; it moves this thread only.
            let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            let l = std::net::TcpListener::bind(addr).expect("bind the old agent's port");
            l.set_nonblocking(true).unwrap();
            tx.send(()).unwrap();
            let old = storlab::fleet::wire::PROTOCOL_VERSION - 1;
            let body = serde_json::to_string(&storlab::fleet::wire::ErrorReply {
                protocol: old,
                storlab_version: "0.0.9".into(),
                host: "old-agent".into(),
                kind: storlab::fleet::wire::ErrorKind::Version,
                error: storlab::fleet::wire::check_version(
                    old,
                    "0.0.9",
                    storlab::fleet::wire::PROTOCOL_VERSION,
                    storlab::fleet::wire::STORLAB_VERSION,
                    "agent old-agent",
                    "the controller",
                )
                .unwrap_err(),
            })
            .unwrap();
            let mut served = 0;
            let deadline = Instant::now() + Duration::from_secs(300);
            while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                match l.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut buf = [0u8; 4096];
                        let _ = s.read(&mut buf);
                        let _ = write!(
                            s,
                            "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\
                             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        served += 1;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
            served
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the old agent listens");
        OldAgent {
            stop,
            thread: Some(thread),
        }
    }

    /// Stop it; how many requests it answered.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for OldAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A PID file (`PID START_TIME`) in a deployed agent's directory, read here:
/// the namespace hosts share this machine's file system.
fn pid_file(dir: &str, file: &str) -> Option<Proc> {
    let t = std::fs::read_to_string(Path::new(dir).join(file)).ok()?;
    let mut it = t.split_whitespace();
    Some(Proc {
        pid: it.next()?.parse().ok()?,
        start_time: it.next()?.parse().ok()?,
        log: PathBuf::new(),
    })
}

/// Check a `storlab run --json` result: every host of `agents` ran and the
/// fleet's figures are the sum of the hosts'.
fn assert_merged(json: &Path, agents: &[String]) {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let p = &doc["jobs"][0]["points"][0];
    let hosts = p["hosts"].as_array().expect("hosts[]");
    let mut names: Vec<String> = hosts
        .iter()
        .map(|h| h["host"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    let mut want = agents.to_vec();
    want.sort();
    assert_eq!(names, want, "every deployed agent ran a share");
    for h in hosts {
        assert!(
            u(&h["summary"]["total"]["ios"]) > 0,
            "host {} did I/O: {}",
            h["host"],
            h["summary"]
        );
        assert_eq!(h["lost"], false, "{}", h["host"]);
    }
    for dir in ["read", "write"] {
        let sum: u64 = hosts.iter().map(|h| u(&h["measured"][dir]["ios"])).sum();
        assert_eq!(
            u(&p["measured"][dir]["ios"]),
            sum,
            "fleet {dir} I/Os are the hosts' sum"
        );
    }
    assert!(p["error"].is_null(), "{}", p["error"]);
}

#[test]
fn deploy_run_and_stop_a_fleet_over_ssh_on_four_namespace_hosts() {
    let t0 = Instant::now();
    support::assert_root("the deploy test needs root (network namespaces, sshd)");
    for (tool, pkg) in [("ssh", "openssh-client"), ("ssh-keygen", "openssh-client")] {
        assert!(
            run("sh", &["-c", &format!("command -v {tool}")])
                .status
                .success(),
            "{tool} not found (Debian package {pkg}): run ./setup.sh"
        );
    }
    let lab = Lab::builder("deploy", "256m")
        .state_subdir("lab")
        .args(&["--hosts", "4", "--no-agents"])
        .up();
    let lab_dir = lab.dir.join("lab");
    let hosts: Vec<SshHost> = lab.state["hosts"]
        .as_array()
        .expect("hosts in lab status --json")
        .iter()
        .map(|h| SshHost {
            netns: h["name"].as_str().unwrap().to_string(),
            addr: h["addr"].as_str().unwrap().to_string(),
        })
        .collect();
    assert_eq!(hosts.len(), 4);
    for h in &hosts {
        assert!(
            h_agent_is_null(&lab, &h.netns),
            "lab up --no-agents started an agent in {}",
            h.netns
        );
        assert!(netns_pids(&h.netns).is_empty(), "{} is bare", h.netns);
    }
    let files = SshFiles::new(lab.dir.join("ssh"), &hosts);
    let privsep = PrivsepDir::ensure();
    let mut sshds = Sshds::start(&files, &hosts);
    let remote = lab.dir.join("remote");
    std::fs::create_dir_all(&remote).unwrap();
    let fleet = lab.dir.join("fleet");
    let _fleet_guard = FleetGuard(fleet.clone());
    let ssh_entry = |h: &SshHost| format!("root@{}:{SSH_PORT}", h.addr);
    let agents: Vec<String> = hosts
        .iter()
        .map(|h| format!("{}:{AGENT_PORT}", h.addr))
        .collect();
    let deploy = |hosts_arg: &str| {
        storlab()
            .args(["fleet", "deploy", "--hosts", hosts_arg, "--dir"])
            .arg(&fleet)
            .arg("--ssh-config")
            .arg(&files.client_config)
            .args(["--agent-port", &AGENT_PORT.to_string(), "--allow-lab"])
            .arg(&lab_dir)
            .arg("--remote-dir")
            .arg(&remote)
            .output()
            .unwrap()
    };
    let remote_entries = || -> Vec<String> {
        std::fs::read_dir(&remote)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let sshd_only =
        |k: usize| eventually(10, || netns_pids(&hosts[k].netns) == vec![sshds.0[k].pid]);

    // 1. A host whose ssh port has no server, and one where a stale agent of
    //    another protocol version holds the agent port: one line each, and
    //    the two good hosts are undone.
    let old = OldAgent::start(&hosts[3].netns, agents[3].parse().unwrap());
    let t = Instant::now();
    let bad = format!(
        "{},root@{}:{},{},{}",
        ssh_entry(&hosts[0]),
        hosts[1].addr,
        SSH_PORT + 1,
        ssh_entry(&hosts[2]),
        ssh_entry(&hosts[3])
    );
    let o = deploy(&bad);
    let failed_deploy_s = t.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("the failed deploy said:\n{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("storlab: host"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per failing host: {err}");
    let unreachable = format!("storlab: host root@{}:{}:", hosts[1].addr, SSH_PORT + 1);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&unreachable) && l.contains("Connection refused")),
        "the unreachable host named with why: {err}"
    );
    let stale = format!("storlab: host {}:", ssh_entry(&hosts[3]));
    let old_protocol = format!("protocol {}", storlab::fleet::wire::PROTOCOL_VERSION - 1);
    assert!(
        lines.iter().any(|l| l.starts_with(&stale)
            && l.contains(&agents[3])
            && l.contains(&old_protocol)
            && l.contains("0.0.9")),
        "the stale agent of another version named with both versions: {err}"
    );
    assert!(
        old.stop() >= 1,
        "the deploy asked the stale agent who it is"
    );
    assert!(
        remote_entries().is_empty(),
        "the undone hosts keep nothing: {:?}",
        remote_entries()
    );
    for k in [0, 2] {
        assert!(sshd_only(k), "nothing but sshd left in {}", hosts[k].netns);
    }
    for f in ["fleet.json", "hosts", "token"] {
        assert!(!fleet.join(f).exists(), "{f} left after a failed deploy");
    }

    // 2. The real deploy over the four sshds.
    let list: Vec<String> = hosts.iter().map(ssh_entry).collect();
    let t = Instant::now();
    let o = deploy(&list.join(","));
    let deploy_s = t.elapsed().as_secs_f64();
    let out = ok(o, "fleet deploy");
    for (h, a) in list.iter().zip(&agents) {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("host {h}: agent {a} up"))
                    && l.contains(&format!(
                        "protocol {}",
                        storlab::fleet::wire::PROTOCOL_VERSION
                    ))
                    && l.contains("clock offset")),
            "a line for {h}: {out}"
        );
    }
    let hosts_file = fleet.join("hosts");
    let token_file = fleet.join("token");
    let listed = storlab::fleet::controller::parse_hosts(hosts_file.to_str().unwrap()).unwrap();
    assert_eq!(listed, agents, "DIR/hosts is a --hosts file of the agents");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the generated token is private");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fleet.join("fleet.json")).unwrap()).unwrap();
    let dirs: Vec<String> = state["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["remote_dir"].as_str().unwrap().to_string())
        .collect();
    let mut supervisors = Vec::new();
    let mut agent_procs = Vec::new();
    for (k, d) in dirs.iter().enumerate() {
        assert!(d.starts_with(remote.to_str().unwrap()), "{d}");
        let mode = std::fs::metadata(Path::new(d).join("token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the copied token is private");
        let sup = pid_file(d, "supervisor.pid").expect("supervisor.pid");
        let agent = pid_file(d, "agent.pid").expect("agent.pid");
        for (what, p) in [("supervisor", &sup), ("agent", &agent)] {
            assert!(p.alive(), "the {what} of host {k} runs");
            assert_eq!(
                netns_of(p.pid),
                Some(netns_inode(&hosts[k].netns)),
                "the {what} runs inside {}",
                hosts[k].netns
            );
        }
        supervisors.push(sup);
        agent_procs.push(agent);
    }

    // 3. Supervision: an agent killed is started again, and answers.
    assert!(agent_procs[0].kill());
    let restarted = eventually(15, || {
        pid_file(&dirs[0], "agent.pid").is_some_and(|p| p.pid != agent_procs[0].pid && p.alive())
    });
    assert!(
        restarted,
        "the supervisor started the agent again: {}",
        process::tail(&Path::new(&dirs[0]).join("supervisor.log"), 5)
    );
    agent_procs[0] = pid_file(&dirs[0], "agent.pid").unwrap();
    let up = eventually(15, || {
        storlab()
            .args(["fleet", "status", "--dir"])
            .arg(&fleet)
            .output()
            .unwrap()
            .status
            .success()
    });
    assert!(up, "fleet status: every agent up after the restart");
    let o = storlab()
        .args(["fleet", "status", "--dir"])
        .arg(&fleet)
        .output()
        .unwrap();
    let status = ok(o, "fleet status");
    assert_eq!(
        status
            .lines()
            .filter(|l| l.contains(" up, storlab "))
            .count(),
        4,
        "{status}"
    );

    // 4. Runs over the deployed fleet: null: and the lab's NBD export.
    let json = lab.dir.join("null.json");
    let o = storlab()
        .args(["run", "--no-db", "--hosts"])
        .arg(&hosts_file)
        .arg("--token-file")
        .arg(&token_file)
        .args([
            "--target", "null:", "--vms", "8", "--rw", "randread", "--bs", "4k",
        ])
        .args([
            "--iodepth",
            "4",
            "--ramp_time",
            "0",
            "--runtime",
            "3",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    ok(o, "storlab run over the deployed fleet (null:)");
    assert_merged(&json, &agents);
    let json = lab.dir.join("nbd.json");
    let o = storlab()
        .args(["run", "--no-db", "--hosts"])
        .arg(&hosts_file)
        .arg("--token-file")
        .arg(&token_file)
        .args([
            "--target",
            &lab.url("nbd"),
            "--vms",
            "4",
            "--size",
            "32m",
            "--rw",
            "read",
        ])
        .args([
            "--bs",
            "64k",
            "--iodepth",
            "2",
            "--ramp_time",
            "0",
            "--runtime",
            "2",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    ok(o, "storlab run over the deployed fleet (the lab's NBD)");
    assert_merged(&json, &agents);

    // 4b. A compare over the deployed fleet: the lab's NFSv3 and NBD in
    // turn, every point on all four hosts, each one's servers' CPU measured
    // here beside it, and what bound it named.
    let json = lab.dir.join("compare.json");
    let o = storlab()
        .args(["compare", "--no-db", "--hosts"])
        .arg(&hosts_file)
        .arg("--token-file")
        .arg(&token_file)
        .arg("--state-dir")
        .arg(&lab_dir)
        .args(["--targets", "nfs3,nbd", "--vms", "4", "--size", "32m"])
        .args(["--rw", "randread", "--bs", "4k", "--iodepth", "4"])
        .args(["--ramp_time", "0", "--runtime", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let out = ok(o, "storlab compare over the deployed fleet");
    assert!(out.contains("relative to nfs3 = 100"), "{out}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let cpu = doc["compare"]["server_cpu"].as_array().unwrap();
    assert_eq!(cpu.len(), 2, "a point per target: {cpu:?}");
    for (entry, server) in cpu.iter().zip(["ganesha", "nbdkit"]) {
        let s = &entry["servers"][0];
        assert_eq!(s["name"], server, "{entry}");
        assert!(
            s["cpu_s"].as_f64().unwrap() > 0.0,
            "{server} spent CPU serving the fleet: {entry}"
        );
    }
    for job in doc["jobs"].as_array().unwrap() {
        for p in job["points"].as_array().unwrap() {
            let hosts: Vec<&str> = p["hosts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["host"].as_str().unwrap())
                .collect();
            assert_eq!(hosts.len(), 4, "every agent ran the point: {hosts:?}");
            assert!(p["bound"]["by"].is_string(), "{}", p["bound"]);
        }
    }

    // 5. Stop: every agent and supervisor gone, every copied file too.
    let o = storlab()
        .args(["fleet", "stop", "--dir"])
        .arg(&fleet)
        .output()
        .unwrap();
    let out = ok(o, "fleet stop");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("agent and supervisor stopped"))
            .count(),
        4,
        "{out}"
    );
    for p in supervisors.iter().chain(&agent_procs) {
        assert!(!p.alive(), "pid {} still runs after fleet stop", p.pid);
    }
    assert!(
        remote_entries().is_empty(),
        "fleet stop removed what it copied: {:?}",
        remote_entries()
    );
    for f in ["fleet.json", "hosts", "token"] {
        assert!(!fleet.join(f).exists(), "{f} left after fleet stop");
    }
    for (h, a) in list.iter().zip(&agents) {
        let log = fleet
            .join("logs")
            .join(format!("{}.agent.log", h.replace(['@', ':'], "_")));
        let log =
            std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        assert!(log.contains(&format!("listening on {a}")), "{log}");
        let refused = TcpStream::connect_timeout(&a.parse().unwrap(), Duration::from_secs(2))
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
        assert!(refused, "nothing answers at {a} after fleet stop");
    }
    for (k, h) in hosts.iter().enumerate() {
        assert!(sshd_only(k), "nothing but sshd left in {}", h.netns);
    }

    // 6. The sshds, then the lab: nothing left in any namespace, no namespace left.
    let sshd_pids: Vec<u32> = sshds.0.iter().map(|p| p.pid).collect();
    sshds.stop();
    for (k, h) in hosts.iter().enumerate() {
        assert!(
            !support::pid_alive(sshd_pids[k] as u64),
            "sshd {} stopped",
            sshd_pids[k]
        );
        assert!(
            eventually(5, || netns_pids(&h.netns).is_empty()),
            "{} is empty",
            h.netns
        );
    }
    drop(privsep);
    let names: Vec<String> = hosts.iter().map(|h| h.netns.clone()).collect();
    lab.down_clean();
    let list = String::from_utf8_lossy(&run("ip", &["netns", "list"]).stdout).into_owned();
    for n in names {
        assert!(
            !list.split_whitespace().any(|w| w == n),
            "namespace {n} left: {list}"
        );
    }
    eprintln!(
        "deploy test: failed deploy {failed_deploy_s:.1} s, deploy of 4 hosts {deploy_s:.1} s, whole test {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Whether the lab recorded no agent for host namespace `netns`.
fn h_agent_is_null(lab: &Lab, netns: &str) -> bool {
    lab.state["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == netns)
        .is_some_and(|h| h["agent"].is_null())
}

#[test]
fn quoted_words_come_back_intact_through_a_shell() {
    // What the deploy sends over ssh is parsed by the remote user's shell.
    let words = [
        "plain",
        "two words",
        "it's",
        "$(no)",
        "`no`",
        "a\"b",
        "*",
        "",
        "--x=';'",
    ];
    let line: Vec<String> = words
        .iter()
        .map(|w| storlab::deploy::ssh::sh_quote(w))
        .collect();
    let o = run("sh", &["-c", &format!("printf '%s\\n' {}", line.join(" "))]);
    let got: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(got, words);
}

/// `kubectl` with no cluster and no kubeconfig of the user's.
fn kubectl(dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, "").unwrap();
    let mut c = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("kubectl: {e} (Debian package kubernetes-client: run ./setup.sh)")
        });
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

/// Whether every field of `want` is in `got` with the same value (`got` may
/// have more: the defaults kubectl fills in).
fn subset(want: &serde_json::Value, got: &serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                let p = format!("{path}.{k}");
                subset(
                    v,
                    g.get(k).ok_or(format!(
                        "{p}: dropped by kubectl (not a field of that type)"
                    ))?,
                    &p,
                )?;
            }
            Ok(())
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .try_for_each(|(i, (w, g))| subset(w, g, &format!("{path}[{i}]"))),
        _ if want == got => Ok(()),
        _ => Err(format!("{path}: wrote {want}, kubectl read {got}")),
    }
}

#[test]
fn the_kubernetes_manifest_decodes_in_kubectl_as_written() {
    let dir = support::TempDir::new("manifest", "kubectl");
    let token = dir.join("token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
    let args = [
        "fleet",
        "manifest",
        "--agents",
        "3",
        "--allow",
        "null:",
        "--allow",
        "/srv/storlab",
        "--token-file",
        token.to_str().unwrap(),
        "--",
        "--target",
        "null:",
        "--vms",
        "6",
    ];
    let yaml = ok(storlab().args(args).output().unwrap(), "fleet manifest");
    let cfg = storlab::deploy::manifest::ManifestConfig {
        namespace: "storlab".into(),
        image: format!("registry.example/storlab:{}", env!("CARGO_PKG_VERSION")),
        agent_port: 7878,
        allow: vec!["null:".into(), "/srv/storlab".into()],
        agents: 3,
        token_file: Some(token.clone()),
        run_args: ["--target", "null:", "--vms", "6"]
            .map(String::from)
            .to_vec(),
    };
    let docs = storlab::deploy::manifest::documents(&cfg).unwrap();
    let texts: Vec<&str> = yaml
        .split("---\n")
        .filter(|t| !t.trim().is_empty())
        .collect();
    assert_eq!(texts.len(), docs.len(), "{yaml}");
    let version = kubectl(dir.path(), &["version", "--client"], "");
    let version = String::from_utf8_lossy(&version.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    for (t, d) in texts.iter().zip(&docs) {
        let kind = d.object["kind"].as_str().unwrap();
        // `set env --local` decodes the object into its Go type offline, with
        // no cluster; it sets an environment variable only on pod templates.
        let o = kubectl(
            dir.path(),
            &[
                "set",
                "env",
                "--local",
                "-f",
                "-",
                "-o",
                "json",
                "STORLAB_KUBECTL_CHECK=1",
            ],
            t,
        );
        match kind {
            "DaemonSet" | "Job" => {
                assert!(
                    o.status.success(),
                    "kubectl ({version}) on the {kind}: {}",
                    text(&o)
                );
                let mut got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                // The variable set for the check comes off again: kubectl sets
                // it on every container (1.32: init containers too; 1.20: not).
                let spec = &mut got["spec"]["template"]["spec"];
                let mut set = 0;
                for list in ["containers", "initContainers"] {
                    for c in spec[list].as_array_mut().into_iter().flatten() {
                        let env = c["env"].as_array_mut();
                        if let Some(env) = env
                            && env
                                .last()
                                .is_some_and(|e| e["name"] == "STORLAB_KUBECTL_CHECK")
                        {
                            env.pop();
                            set += 1;
                        }
                    }
                }
                assert!(
                    set >= 1,
                    "kubectl ({version}) set the check variable: {got}"
                );
                subset(&d.object, &got, kind)
                    .unwrap_or_else(|e| panic!("kubectl ({version}): {e}"));
            }
            _ => {
                // Decoded into its type (a field of a wrong type fails before this).
                let e = String::from_utf8_lossy(&o.stderr).into_owned();
                assert!(
                    e.contains(&format!("*v1.{kind}"))
                        && e.contains("does not have a pod template"),
                    "kubectl ({version}) on the {kind}: {e}"
                );
            }
        }
    }
    // The Secret as the manifest's comment says to make it, offline too.
    let from_file = format!("--from-file=token={}", token.display());
    let o = kubectl(
        dir.path(),
        &[
            "-n",
            "storlab",
            "create",
            "secret",
            "generic",
            "storlab-token",
            &from_file,
            "--dry-run=client",
            "-o",
            "json",
        ],
        "",
    );
    let secret: serde_json::Value =
        serde_json::from_slice(&ok(o, "kubectl create secret").into_bytes()).unwrap();
    assert_eq!(secret["metadata"]["name"], "storlab-token");
    assert!(secret["data"]["token"].is_string());
}

#[test]
fn the_example_manifest_is_what_the_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(root.join("deploy/kubernetes.yaml")).unwrap();
    let (head, body) = file
        .split_once("\n---\n")
        .map(|(h, b)| (h, format!("---\n{b}")))
        .unwrap();
    let cmd = head
        .lines()
        .find_map(|l| l.strip_prefix("# made by: storlab "))
        .expect("deploy/kubernetes.yaml names the command that made it");
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let printed = ok(storlab().args(&args).output().unwrap(), "fleet manifest");
    assert_eq!(
        body, printed,
        "deploy/kubernetes.yaml is stale: run `storlab {cmd}`"
    );
}

/// What a minimal Debian image (debootstrap's minbase, which the slim images
/// are) holds, as far as this machine's packages tell: every installed package
/// of priority required or marked essential, and what they depend on.
fn minbase() -> std::collections::BTreeSet<String> {
    let o = run(
        "dpkg-query",
        &[
            "-W",
            "-f",
            "${Package}\t${Priority}\t${Essential}\t${Pre-Depends}, ${Depends}\n",
        ],
    );
    let mut deps = std::collections::BTreeMap::new();
    let mut todo = Vec::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [pkg, prio, essential, depends] = f[..] else {
            continue;
        };
        let names: Vec<String> = depends
            .split([',', '|'])
            .filter_map(|d| d.split_whitespace().next())
            .map(|d| d.split(':').next().unwrap().to_string())
            .collect();
        deps.insert(pkg.to_string(), names);
        if prio == "required" || essential == "yes" {
            todo.push(pkg.to_string());
        }
    }
    let mut base = std::collections::BTreeSet::new();
    while let Some(p) = todo.pop() {
        if base.insert(p.clone()) {
            todo.extend(deps.get(&p).into_iter().flatten().cloned());
        }
    }
    assert!(base.contains("libc6"), "the base holds libc6: {base:?}");
    base
}

#[test]
fn the_containerfile_installs_every_library_the_binary_links() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recipe = std::fs::read_to_string(root.join("deploy/Containerfile")).unwrap();
    assert!(
        recipe
            .lines()
            .any(|l| l.trim() == "FROM debian:bookworm-slim"),
        "{recipe}"
    );
    assert!(
        recipe
            .lines()
            .any(|l| l.trim() == "COPY target/release/storlab /usr/local/bin/storlab"),
        "{recipe}"
    );
    let joined = recipe.replace("\\\n", " ");
    let install = joined
        .lines()
        .find(|l| l.contains("apt-get install"))
        .expect("an apt-get install line");
    let packages: Vec<&str> = install
        .split("apt-get install")
        .nth(1)
        .unwrap()
        .split("&&")
        .next()
        .unwrap()
        .split_whitespace()
        .filter(|w| !w.starts_with('-'))
        .collect();
    for p in &packages {
        let o = run("dpkg-query", &["-W", "-f", "${Status}", p]);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("install ok installed"),
            "the Containerfile's {p} is not a package installed here (a typo?)"
        );
    }
    let elf = ok(
        run("readelf", &["-d", env!("CARGO_BIN_EXE_storlab")]),
        "readelf (binutils)",
    );
    let needed: Vec<&str> = elf
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    assert!(needed.contains(&"libc.so.6"), "{elf}");
    let ldd = ok(run("ldd", &[env!("CARGO_BIN_EXE_storlab")]), "ldd");
    let base = minbase();
    for lib in needed {
        let path = ldd
            .lines()
            .map(str::trim)
            .find_map(|l| match l.split_once(" => ") {
                // `libfoo.so.1 => /path (addr)`, or the loader: `/path/ld-linux... (addr)`
                Some((name, rest)) if name == lib => rest.split_whitespace().next(),
                None if l.split_whitespace().next()?.ends_with(&format!("/{lib}")) => {
                    l.split_whitespace().next()
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("ldd does not resolve {lib}: {ldd}"));
        // dpkg knows a library by the path its package installed, which the
        // merged /usr may show under another name: try the ones it can have.
        let real = std::fs::canonicalize(path).unwrap().display().to_string();
        let unmerged = real.strip_prefix("/usr").unwrap_or(&real).to_string();
        let owner = [path.to_string(), real.clone(), unmerged]
            .iter()
            .find_map(|p| {
                let o = run("dpkg", &["-S", p]);
                let out = String::from_utf8_lossy(&o.stdout).into_owned();
                let pkg = out.split(':').next()?.trim().to_string();
                (o.status.success() && !pkg.is_empty()).then_some(pkg)
            })
            .unwrap_or_else(|| panic!("no Debian package holds {lib} ({real})"));
        assert!(
            base.contains(&owner) || packages.contains(&owner.as_str()),
            "{lib} comes from {owner}, which debian:bookworm-slim lacks (not required, essential \
             or a dependency of one) and the Containerfile does not install"
        );
    }
}
