//! The fleet: agents as processes on 127.0.0.1, a controller run against them.
//! Every agent is stopped by PID when its guard drops.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::TempDir;
use support::agent::AgentProc;

const TOKEN: &str = "fleet-test-token-0123456789";

/// Runs go to a results database under cargo's target temp dir.
fn test_db() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet-tests.db")
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_storlab")
}

/// An agent named `name` with a token file, allow list and controller timeout.
fn start_agent(name: &str, token_file: &Path, allow: &[&str], timeout_s: u32) -> AgentProc {
    let mut args = vec![
        OsString::from("--token-file"),
        token_file.into(),
        "--controller-timeout".into(),
        timeout_s.to_string().into(),
    ];
    for a in allow {
        args.extend(["--allow".into(), OsString::from(a)]);
    }
    AgentProc::start(name, args)
}

fn token_file(dir: &TempDir, token: &str) -> PathBuf {
    let p = dir.join("token");
    std::fs::write(&p, format!("{token}\n")).unwrap();
    p
}

fn agents(dir: &TempDir, n: usize, timeout_s: u32) -> Vec<AgentProc> {
    let tf = token_file(dir, TOKEN);
    (0..n)
        .map(|i| start_agent(&format!("agent{i}"), &tf, &["null:"], timeout_s))
        .collect()
}

fn hosts_arg(agents: &[AgentProc]) -> String {
    agents
        .iter()
        .map(|a| a.addr.clone())
        .collect::<Vec<_>>()
        .join(",")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .env("STORLAB_DB", test_db())
        .arg("run")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn point(json: &Path) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    doc["jobs"][0]["points"][0].clone()
}

/// Raw HTTP/1.1 request; returns (status, body).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}

/// (ios, bytes, histogram count, buckets) of one direction of a snapshot.
fn dir_parts(s: &Value, dir: &str) -> (u64, u64, u64, BTreeMap<u64, u64>) {
    let d = &s[dir];
    let buckets = d["lat"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (u(&b[0]), u(&b[1])))
        .collect();
    (u(&d["ios"]), u(&d["bytes"]), u(&d["lat"]["count"]), buckets)
}

fn add(a: &mut (u64, u64, u64, BTreeMap<u64, u64>), b: (u64, u64, u64, BTreeMap<u64, u64>)) {
    a.0 += b.0;
    a.1 += b.1;
    a.2 += b.2;
    for (k, v) in b.3 {
        *a.3.entry(k).or_default() += v;
    }
}

#[test]
fn fleet_result_is_the_sum_of_its_hosts() {
    let dir = TempDir::new("fleet", "sum");
    let ag = agents(&dir, 3, 10);
    let json = dir.join("out.json");
    let tf = dir.join("token");
    let o = run(&[
        "--hosts",
        &hosts_arg(&ag),
        "--token-file",
        tf.to_str().unwrap(),
        "--target",
        "null:",
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--bs",
        "4k",
        "--iodepth",
        "4",
        "--vms",
        "5",
        "--ramp_time",
        "1",
        "--runtime",
        "2",
        "--rate_iops",
        "2000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert!(
        stderr(&o).contains("slowest"),
        "progress names the slowest host: {}",
        stderr(&o)
    );
    let p = point(&json);
    let hosts = p["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    let vms: Vec<Vec<u64>> = hosts
        .iter()
        .map(|h| h["vms"].as_array().unwrap().iter().map(u).collect())
        .collect();
    assert_eq!(
        vms,
        vec![vec![0, 3], vec![1, 4], vec![2]],
        "round-robin deal"
    );
    let fleet = p["intervals"].as_array().unwrap();
    assert_eq!(fleet.len(), 3, "one ramp and two measured intervals");
    for h in hosts {
        assert_eq!(
            h["intervals"].as_array().unwrap().len(),
            fleet.len(),
            "{}",
            h["host"]
        );
        assert!(
            u(&h["summary"]["total"]["ios"]) > 0,
            "host {} ran",
            h["host"]
        );
        assert_eq!(h["lost"], false);
    }
    for (i, iv) in fleet.iter().enumerate() {
        for dirn in ["read", "write"] {
            let mut sum = (0, 0, 0, BTreeMap::new());
            for h in hosts {
                add(&mut sum, dir_parts(&h["intervals"][i]["stats"], dirn));
            }
            let f = dir_parts(&iv["stats"], dirn);
            assert!(f.0 > 0);
            assert_eq!(f, sum, "interval {i} {dirn}: fleet = sum of hosts");
            assert_eq!(f.2, f.0, "histogram count = I/Os");
        }
    }
    for dirn in ["read", "write"] {
        let mut sum = (0, 0, 0, BTreeMap::new());
        for h in hosts {
            add(&mut sum, dir_parts(&h["measured"], dirn));
        }
        assert_eq!(dir_parts(&p["measured"], dirn), sum, "measured {dirn}");
        let host_ios: u64 = hosts.iter().map(|h| u(&h["summary"][dirn]["ios"])).sum();
        assert_eq!(u(&p["summary"][dirn]["ios"]), host_ios);
    }
    let workers = p["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 5);
    let wsum: u64 = workers
        .iter()
        .map(|w| u(&w["stats"]["read"]["ios"]) + u(&w["stats"]["write"]["ios"]))
        .sum();
    assert_eq!(wsum, u(&p["summary"]["total"]["ios"]), "workers add up");
    assert!(workers.iter().all(|w| u(&w["stats"]["read"]["ios"]) > 0));
    // Rate-capped: 5 workers x 2000 IOPS, whatever the hosts.
    let iops = p["summary"]["total"]["iops"].as_f64().unwrap();
    assert!((iops - 10_000.0).abs() < 1_000.0, "fleet IOPS {iops}");

    // Live counters: token required, then Prometheus text with the run's I/Os.
    let (status, _) = http(&ag[0].addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 401);
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http(
        &ag[0].addr,
        "GET",
        "/metrics",
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 200);
    let read_line = text
        .lines()
        .find(|l| l.starts_with("storlab_agent_ios_total{") && l.contains("direction=\"read\""))
        .expect("read I/O counter");
    let n: u64 = read_line.rsplit(' ').next().unwrap().parse().unwrap();
    let host0: u64 = hosts[0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| u(&i["stats"]["read"]["ios"]))
        .sum();
    assert_eq!(n, host0, "agent0's counter = its intervals");
    assert!(
        text.contains("storlab_agent_run_state{host=\"agent0\",state=\"idle\"} 1"),
        "{text}"
    );
}

#[test]
fn wrong_token_is_refused_before_anything_runs() {
    let dir = TempDir::new("fleet", "token");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let tf = token_file(&dir, TOKEN);
    let allow = data.to_str().unwrap().to_string();
    let ag = start_agent("agent0", &tf, &[&allow], 10);
    let wrong = dir.join("wrong");
    std::fs::write(&wrong, "another-token-0123456789\n").unwrap();
    let target = format!("file:{allow}");
    let o = run(&[
        "--hosts",
        &ag.addr,
        "--token-file",
        wrong.to_str().unwrap(),
        "--target",
        &target,
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--runtime",
        "1",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&ag.addr) && e.contains("token"), "{e}");
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "nothing was prepared"
    );
}

#[test]
fn disallowed_target_is_refused_naming_host_and_target() {
    let dir = TempDir::new("fleet", "allow");
    let ok = dir.join("ok");
    let other = dir.join("other");
    std::fs::create_dir_all(&ok).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    // A symlink inside the allowed directory leads out of it.
    std::os::unix::fs::symlink(&other, ok.join("link")).unwrap();
    let tf = token_file(&dir, TOKEN);
    let ag = start_agent("agent0", &tf, &[ok.to_str().unwrap()], 10);
    for target in [other.clone(), ok.join("link")] {
        let t = format!("file:{}", target.display());
        let o = run(&[
            "--hosts",
            &ag.addr,
            "--token-file",
            tf.to_str().unwrap(),
            "--target",
            &t,
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "1m",
            "--runtime",
            "1",
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&ag.addr), "names the host: {e}");
        assert!(
            e.contains(&target.display().to_string()),
            "names the target: {e}"
        );
        assert!(e.contains("not under any --allow"), "{e}");
    }
    assert_eq!(
        std::fs::read_dir(&other).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn agent_refuses_another_protocol_version_naming_both() {
    let dir = TempDir::new("fleet", "version");
    let tf = token_file(&dir, TOKEN);
    let ag = start_agent("agent0", &tf, &["null:"], 10);
    let auth = format!("Bearer {TOKEN}");
    let (status, body) = http(
        &ag.addr,
        "POST",
        "/v1/hello",
        &[
            ("X-Storlab-Protocol", "999"),
            ("X-Storlab-Version", "9.9.9"),
            ("Authorization", &auth),
        ],
        "{}",
    );
    assert_eq!(status, 409, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["kind"], "version");
    let e = v["error"].as_str().unwrap();
    let ours = format!("protocol {}", storlab::fleet::wire::PROTOCOL_VERSION);
    for part in [
        ours.as_str(),
        "protocol 999",
        "storlab 9.9.9",
        env!("CARGO_PKG_VERSION"),
        "agent0",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    // The version is checked before the token.
    let other = (storlab::fleet::wire::PROTOCOL_VERSION + 1).to_string();
    let (status, body) = http(
        &ag.addr,
        "POST",
        "/v1/hello",
        &[("X-Storlab-Protocol", other.as_str())],
        "{}",
    );
    assert_eq!(status, 409, "{body}");
}

/// Start a 3-agent run, kill agent 1 after `kill_after`, return the output.
fn run_losing_one(
    policy: &str,
    runtime: u32,
    kill_after: Duration,
) -> (Output, Value, String, Instant) {
    let dir = TempDir::new("fleet", &format!("loss-{policy}"));
    let mut ag = agents(&dir, 3, 10);
    let json = dir.join("out.json");
    let tf = dir.join("token");
    let child = Command::new(bin())
        .arg("run")
        .args([
            "--hosts",
            &hosts_arg(&ag),
            "--token-file",
            tf.to_str().unwrap(),
            "--target",
            "null:",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--iodepth",
            "2",
            "--vms",
            "3",
            "--rate_iops",
            "1000",
            "--runtime",
            &runtime.to_string(),
            "--on-host-loss",
            policy,
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(kill_after);
    let lost = ag[1].addr.clone();
    ag[1].kill();
    let killed = Instant::now();
    let o = child.wait_with_output().unwrap();
    (o, point(&json), lost, killed)
}

#[test]
fn lost_host_with_continue_keeps_its_intervals() {
    let (o, p, lost, _) = run_losing_one("continue", 5, Duration::from_millis(2600));
    let e = stderr(&o);
    assert!(o.status.success(), "stderr: {e}");
    assert!(
        e.contains(&lost) && e.contains("lost"),
        "the loss is named: {e}"
    );
    let hosts = p["hosts"].as_array().unwrap();
    let h1 = &hosts[1];
    assert_eq!(h1["host"], lost.as_str());
    assert_eq!(h1["lost"], true);
    assert!(h1["error"].as_str().unwrap().contains(&lost));
    let kept = h1["intervals"].as_array().unwrap().len();
    assert!((1..5).contains(&kept), "completed intervals kept: {kept}");
    assert!(u(&h1["summary"]["total"]["ios"]) > 0);
    for h in [&hosts[0], &hosts[2]] {
        assert_eq!(h["intervals"].as_array().unwrap().len(), 5);
    }
    assert_eq!(p["intervals"].as_array().unwrap().len(), 5);
    assert!(p["error"].is_null());
    // The fleet keeps the lost host's share of the intervals it completed.
    let fleet0 = u(&p["intervals"][0]["stats"]["read"]["ios"]);
    let sum0: u64 = hosts
        .iter()
        .map(|h| u(&h["intervals"][0]["stats"]["read"]["ios"]))
        .sum();
    assert_eq!(fleet0, sum0);
}

#[test]
fn lost_host_with_stop_ends_the_run_naming_it() {
    let (o, p, lost, killed) = run_losing_one("stop", 30, Duration::from_millis(2600));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "stderr: {e}");
    assert!(
        killed.elapsed() < Duration::from_secs(15),
        "noticed within seconds"
    );
    assert!(e.contains(&lost) && e.contains("lost"), "{e}");
    assert!(p["error"].as_str().unwrap().contains(&lost));
    let hosts = p["hosts"].as_array().unwrap();
    assert_eq!(hosts[1]["lost"], true);
    assert!(!hosts[1]["intervals"].as_array().unwrap().is_empty());
    let n = p["intervals"].as_array().unwrap().len();
    assert!(
        (2..30).contains(&n),
        "stopped early, measured intervals kept: {n}"
    );
    for h in [&hosts[0], &hosts[2]] {
        assert!(h["intervals"].as_array().unwrap().len() >= 2);
    }
}

/// The agent's counter of read I/Os and whether it is running, from /metrics.
fn agent_state(addr: &str) -> (u64, bool) {
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http(addr, "GET", "/metrics", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    let reads = text
        .lines()
        .find(|l| l.starts_with("storlab_agent_ios_total{") && l.contains("\"read\""))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    (reads, text.contains("state=\"running\"} 1"))
}

#[test]
fn agent_stops_a_run_whose_controller_vanished() {
    let dir = TempDir::new("fleet", "vanish");
    let ag = agents(&dir, 1, 2);
    let tf = dir.join("token");
    let db = dir.join("results.db");
    let mut controller = Command::new(bin())
        .arg("run")
        .args([
            "--db",
            db.to_str().unwrap(),
            "--hosts",
            &ag[0].addr,
            "--token-file",
            tf.to_str().unwrap(),
            "--target",
            "null:",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--rate_iops",
            "1000",
            "--runtime",
            "60",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        agent_state(&ag[0].addr).1,
        "running while the controller polls"
    );
    controller.kill().unwrap();
    controller.wait().unwrap();
    let killed = Instant::now();
    while agent_state(&ag[0].addr).1 {
        assert!(
            killed.elapsed() < Duration::from_secs(8),
            "agent still running"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (before, _) = agent_state(&ag[0].addr);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(agent_state(&ag[0].addr).0, before, "no more I/O");
    controller_saved_what_it_measured(&db);
}

/// What a controller killed (SIGKILL) after about 2.5 s of a 60 s run left in
/// its database: the run, never finished, with the intervals measured before
/// the kill, each with I/O, shown as incomplete by `results list` and `show`.
fn controller_saved_what_it_measured(db: &Path) {
    let store = storlab::store::Store::open(db).unwrap();
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(
        r.status,
        storlab::store::RunStatus::Running,
        "never finished"
    );
    let rec = store.load_run(r.id).unwrap();
    assert!(!rec.complete && rec.error.is_none() && !rec.interrupted);
    let p = &rec.jobs[0].points[0];
    let n = p.intervals.len();
    // 1 s intervals; killed after ~2.5 s, so 1 or 2 of them were final.
    assert!((1..=3).contains(&n), "intervals saved before the kill: {n}");
    for (i, iv) in p.intervals.iter().enumerate() {
        assert_eq!(iv.index as usize, i);
        assert!(iv.stats.read.ios > 0, "interval {i} has I/O");
    }
    let list = Command::new(bin())
        .args(["results", "list", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{out}{}", stderr(&list));
    assert!(out.contains("incomplete"), "{out}");
    let show = Command::new(bin())
        .args(["results", "show", &r.id.0.to_string(), "--db"])
        .arg(db)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{out}{}", stderr(&show));
    assert!(out.contains("incomplete"), "{out}");
}

/// Debian's prometheus, on a free loopback port with its own storage in
/// `dir`, scraping `target` every second; killed by PID on drop.
struct Prometheus {
    child: std::process::Child,
    addr: String,
}

impl Prometheus {
    fn start(dir: &TempDir, target: &str) -> Prometheus {
        let bin = ["/usr/bin/prometheus", "/usr/sbin/prometheus"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect(
                "prometheus is not installed: run ./setup.sh (it installs Debian's prometheus)",
            );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = dir.join("prometheus.yml");
        std::fs::write(
            &cfg,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: storlab\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            addr: format!("127.0.0.1:{port}"),
        }
    }

    /// The samples of an instant query: (labels, value) each.
    fn query(&self, q: &str) -> Vec<(Value, f64)> {
        // Not listening yet: nothing scraped yet.
        if TcpStream::connect(&self.addr).is_err() {
            return Vec::new();
        }
        let (status, body) = http(
            &self.addr,
            "GET",
            &format!("/api/v1/query?query={q}"),
            &[],
            "",
        );
        if status != 200 {
            return Vec::new();
        }
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        doc["data"]["result"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|s| {
                        let v = s["value"][1].as_str().and_then(|v| v.parse().ok());
                        (s["metric"].clone(), v.unwrap_or(f64::NAN))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Issue 29: the controller of a fleet run serves the fleet's merged series
/// (`host="all"`) beside each host's at `/metrics` on its `--web` address, and
/// Debian's prometheus scrapes them.
#[test]
fn prometheus_scrapes_the_controllers_merged_series() {
    use std::io::{BufRead, BufReader};
    let dir = TempDir::new("fleet", "prometheus");
    let ag = agents(&dir, 2, 10);
    let tf = dir.join("token");
    let mut child = Command::new(bin())
        .env("STORLAB_DB", test_db())
        .args(["run", "--no-db", "--hosts", &hosts_arg(&ag), "--token-file"])
        .arg(&tf)
        .args([
            "--target", "null:", "--rw", "randread", "--bs", "4k", "--vms", "4",
        ])
        .args(["--rate_iops", "500", "--ramp_time", "0", "--runtime", "12"])
        .args(["--web", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut addr = None;
    while addr.is_none() && err.read_line(&mut line).unwrap() > 0 {
        addr = line
            .split("live page at http://")
            .nth(1)
            .map(|u| u.trim().trim_end_matches('/').to_string());
        line.clear();
    }
    let addr = addr.expect("storlab names its live page");
    let rest = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = err.read_to_string(&mut all);
        all
    });
    let prom = Prometheus::start(&dir, &addr);
    // Wait until prometheus holds a few scrapes with I/O in them.
    let start = Instant::now();
    let samples = loop {
        let s = prom.query("storlab_run_ios_total");
        let all = s
            .iter()
            .find(|(m, _)| m["host"] == "all" && m["direction"] == "read");
        if all.is_some_and(|(_, v)| *v > 0.0) && s.len() >= 6 {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "prometheus never scraped the controller's I/O: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    // Asked while the run still serves its page: once it has ended,
    // prometheus marks its series stale and an instant query finds none.
    let info = prom.query("storlab_run_point_info");
    let status = child.wait().unwrap();
    let stderr = rest.join().unwrap();
    assert!(status.success(), "storlab run: {stderr}");
    let reads: Vec<&(Value, f64)> = samples
        .iter()
        .filter(|(m, _)| m["direction"] == "read" && m["job"] == "storlab")
        .collect();
    let all = reads.iter().find(|(m, _)| m["host"] == "all").unwrap().1;
    let hosts: Vec<f64> = reads
        .iter()
        .filter(|(m, _)| m["host"] != "all")
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(hosts.len(), 2, "one series per agent: {samples:?}");
    // A host's interval is counted when it arrives, the fleet's once every
    // host sent it: the merged count trails the hosts' sum by at most that.
    let sum: f64 = hosts.iter().sum();
    assert!(all > 0.0 && all <= sum, "fleet {all}, hosts {hosts:?}");
    assert!(
        all >= sum - 2.0 * 500.0 * 4.0,
        "fleet {all} trails the hosts' {sum} by more than an interval"
    );
    assert!(info.iter().any(|(m, _)| m["target"] == "null:"), "{info:?}");
}
