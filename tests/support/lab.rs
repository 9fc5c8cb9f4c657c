//! A lab (`storlab lab up`) in its own state directory, taken down on drop
//! whatever happened. Needs root (network namespaces).

use super::{alive, storlab, text};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};

/// A lab in its own state directory, taken down on drop whatever happened.
pub struct Lab {
    /// The test's directory: `storlab-{name}-{pid}` under the temporary
    /// directory, removed on drop.
    pub dir: PathBuf,
    /// The lab's `--state-dir`: `dir` itself or a subdirectory of it.
    state_dir: PathBuf,
    /// Environment given to every storlab command of this lab.
    env: Vec<(String, OsString)>,
    /// The last `lab status --json`.
    pub state: serde_json::Value,
}

/// `--nfs-port P --mountd-port P --iscsi-port P --nbd-port P`, four ports
/// of 127.0.0.1 from [`super::free_port`], for a lab on loopback (labs of
/// tests running at once must not share ports there).
pub fn free_port_args() -> Vec<String> {
    ["--nfs-port", "--mountd-port", "--iscsi-port", "--nbd-port"]
        .iter()
        .flat_map(|opt| [opt.to_string(), super::free_port().to_string()])
        .collect()
}

/// How to bring a lab up: see [`Lab::builder`].
pub struct LabBuilder {
    name: String,
    size: String,
    state_subdir: Option<String>,
    env: Vec<(String, OsString)>,
    env_in_dir: Vec<(String, String)>,
    up_args: Vec<String>,
}

impl LabBuilder {
    /// Keep the backing store on disk in `dir` (`--backing disk
    /// --backing-dir DIR`) instead of in /dev/shm.
    pub fn backing_dir(mut self, dir: &std::path::Path) -> LabBuilder {
        self.up_args
            .extend(["--backing", "disk", "--backing-dir"].map(String::from));
        self.up_args.push(dir.display().to_string());
        self
    }

    /// Where the servers listen: `--net MODE` (loopback or netns). Without
    /// it the builder passes `--net netns`: tests that cut or shape the link
    /// need the storage namespace.
    pub fn net(mut self, mode: &str) -> LabBuilder {
        self.up_args.extend(["--net".into(), mode.to_string()]);
        self
    }

    /// Serve on 127.0.0.1 (`--net loopback`), on four ports free at this
    /// moment (labs of tests running at once must not share ports there).
    pub fn loopback(self) -> LabBuilder {
        let mut b = self.net("loopback");
        b.up_args.extend(free_port_args());
        b
    }

    /// More arguments for `lab up`, e.g. `--hosts 1 --link 1gbe --mtu 9000`.
    pub fn args(mut self, args: &[&str]) -> LabBuilder {
        self.up_args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Keep the lab's state in `sub` inside the test's directory, which is
    /// then created before `lab up` so the test can keep its own files there.
    pub fn state_subdir(mut self, sub: &str) -> LabBuilder {
        self.state_subdir = Some(sub.to_string());
        self
    }

    /// Set `key` to `value` for every storlab command of the lab.
    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> LabBuilder {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// Set `key` to the path `sub` inside the test's directory for every
    /// storlab command of the lab.
    pub fn env_in_dir(mut self, key: &str, sub: &str) -> LabBuilder {
        self.env_in_dir.push((key.to_string(), sub.to_string()));
        self
    }

    /// Check for root, run `lab up --size SIZE` and read its state.
    pub fn up(self) -> Lab {
        super::assert_root("the lab needs root (network namespaces)");
        let dir =
            std::env::temp_dir().join(format!("storlab-{}-{}", self.name, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let state_dir = match &self.state_subdir {
            Some(sub) => {
                std::fs::create_dir_all(&dir).unwrap();
                dir.join(sub)
            }
            None => dir.clone(),
        };
        let mut env = self.env;
        for (key, sub) in self.env_in_dir {
            env.push((key, dir.join(sub).into_os_string()));
        }
        let mut lab = Lab {
            dir,
            state_dir,
            env,
            state: serde_json::Value::Null,
        };
        let mut args = vec!["up", "--size", &self.size];
        args.extend(self.up_args.iter().map(String::as_str));
        if !self.up_args.iter().any(|a| a == "--net") {
            args.extend(["--net", "netns"]);
        }
        // Tests run on the RAM medium unless they name one: the lab's
        // default emulates spindles, far slower than a test wants.
        if !self.up_args.iter().any(|a| a == "--media") {
            args.extend(["--media", "ram"]);
        }
        let o = lab.cmd(&args);
        assert!(
            o.status.success(),
            "lab up failed (run ./setup.sh?): {}",
            text(&o)
        );
        lab.refresh();
        lab
    }
}

impl Lab {
    /// A lab of `size` in `storlab-{name}-{pid}` under the temporary
    /// directory, to be configured further before [`LabBuilder::up`].
    pub fn builder(name: &str, size: &str) -> LabBuilder {
        LabBuilder {
            name: name.to_string(),
            size: size.to_string(),
            state_subdir: None,
            env: Vec::new(),
            env_in_dir: Vec::new(),
            up_args: Vec::new(),
        }
    }

    /// `Lab::builder(name, size).up()`.
    pub fn up(name: &str, size: &str) -> Lab {
        Lab::builder(name, size).up()
    }

    /// The storlab binary with the lab's environment.
    pub fn storlab(&self) -> Command {
        let mut c = storlab();
        for (key, value) in &self.env {
            c.env(key, value);
        }
        c
    }

    /// `storlab lab ARGS --state-dir DIR`.
    pub fn cmd(&self, args: &[&str]) -> Output {
        self.storlab()
            .arg("lab")
            .args(args)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .output()
            .unwrap()
    }

    /// Read the state again (`lab status --json`).
    pub fn refresh(&mut self) {
        let o = self.cmd(&["status", "--json"]);
        self.state = serde_json::from_slice(&o.stdout).expect("lab status --json");
    }

    /// The URL of target `name` (nbd, iscsi, nfs3, nfs4, local).
    pub fn url(&self, name: &str) -> String {
        self.state["targets"][name].as_str().unwrap().to_string()
    }

    /// The PID of `server` as recorded in the state.
    pub fn pid(&self, server: &str) -> i32 {
        self.state["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == server)
            .and_then(|s| s["pid"].as_u64())
            .unwrap_or_else(|| panic!("no {server} in {}", self.state)) as i32
    }

    /// The lab's network namespace.
    pub fn netns(&self) -> String {
        self.state["netns"]["name"].as_str().unwrap().to_string()
    }

    /// The host side of the lab's link.
    pub fn host_if(&self) -> String {
        self.state["netns"]["host_if"].as_str().unwrap().to_string()
    }

    /// The backing file itself (under the media layer: the `local` target
    /// is the same file seen through the media mount).
    pub fn backing(&self) -> PathBuf {
        PathBuf::from(self.state["backing"]["path"].as_str().unwrap())
    }

    /// Take the lab down and check that its servers and namespace are gone.
    pub fn down_clean(self) {
        let pids: Vec<i32> = ["rpcbind", "ganesha", "tgtd", "nbdkit"]
            .iter()
            .map(|s| self.pid(s))
            .collect();
        let ns = self.netns();
        let o = self.cmd(&["down"]);
        assert!(o.status.success(), "lab down: {}", text(&o));
        for pid in pids {
            assert!(!alive(pid), "server pid {pid} still runs after lab down");
        }
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let list = String::from_utf8_lossy(&list.stdout);
        assert!(
            !list.split_whitespace().any(|w| w == ns),
            "namespace {ns} left behind: {list}"
        );
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let o = self.cmd(&["down"]);
        if !o.status.success() {
            eprintln!("lab down failed: {}", text(&o));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A bare lab state directory that runs `lab down` on drop, whatever
/// happened; for tests of `lab up` itself, which bring the lab up (or fail to)
/// and read its state by hand.
pub struct LabGuard {
    /// The lab's `--state-dir`: `storlab-{name}-{pid}` under the temporary
    /// directory (removed first, not created).
    pub dir: PathBuf,
}

impl LabGuard {
    /// A guard for the state directory `storlab-{name}-{pid}`.
    pub fn new(name: &str) -> LabGuard {
        let dir = std::env::temp_dir().join(format!("storlab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        LabGuard { dir }
    }

    /// `storlab lab ARGS --state-dir DIR`.
    pub fn lab(&self, args: &[&str]) -> Output {
        storlab()
            .arg("lab")
            .args(args)
            .arg("--state-dir")
            .arg(&self.dir)
            .output()
            .expect("run storlab")
    }

    /// `lab status --json`.
    pub fn state(&self) -> serde_json::Value {
        let out = self.lab(&["status", "--json"]);
        serde_json::from_slice(&out.stdout).expect("status --json is JSON")
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        let out = self.lab(&["down"]);
        if !out.status.success() {
            eprintln!("lab down in the guard failed: {}", text(&out));
        }
    }
}

/// Run `cmd`, a storlab command that brings up a temporary lab of its own
/// (state in `storlab-{what}-lab-PID` in the temp dir), to its end; check it
/// succeeded and left neither that state directory nor a mount under it.
pub fn run_with_temporary_lab(mut cmd: Command, what: &str) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let state = std::env::temp_dir().join(format!("storlab-{what}-lab-{pid}"));
    assert!(!state.exists(), "{} left behind", state.display());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&state.display().to_string()),
        "a mount under {} left behind",
        state.display()
    );
    o
}
