//! `storlab lab up --media`: the store served through storlab's FUSE media
//! server, every server and the block baseline's loop device on its mount;
//! `lab down` leaving no mount, loop device or process; a media layer that
//! cannot start naming its step and leaving nothing behind; `compare`
//! restoring only the ranges written through the layer (the whole store
//! without one); Ctrl-C during
//! `lab up` taking down what it made. Needs root,
//! /dev/fuse, loop devices and ./setup.sh's packages. Every lab here serves on
//! ports free at that moment (`--net loopback`).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use storlab::media::fuse::Lead;
use support::lab::{Lab, LabGuard};
use support::{alive, text};

/// The fixed delay of every media operation in these tests, µs.
const DELAY_US: f64 = 200.0;

/// Every line of /proc/mounts whose mount point is `mp`.
fn mounts_at(mp: &Path) -> Vec<String> {
    let mp = mp.display().to_string();
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(mp.as_str()))
        .map(str::to_string)
        .collect()
}

/// `losetup -a`.
fn loop_devices() -> String {
    let o = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The storlab network namespaces now.
fn storlab_netns() -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("storlab"))
        .map(str::to_string)
        .collect()
}

/// A short random 4 KiB read/write run on `url` (the lab's own target);
/// returns its total summary.
fn short_run(lab: &Lab, url: &str) -> serde_json::Value {
    let json = lab.dir.join("run.json");
    let o = lab
        .storlab()
        .args(["run", "--no-db", "-q", "--target", url])
        .args([
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--iodepth",
            "4",
            "--size",
            "8m",
        ])
        .args(["--ramp_time", "0", "--runtime", "1", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "storlab run on {url}: {}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    doc["jobs"][0]["points"][0]["summary"]["total"].clone()
}

#[test]
fn a_media_lab_serves_fc8_and_nfs3_through_the_mount_and_down_leaves_nothing() {
    let lab = Lab::builder("labmedia", "64m")
        .loopback()
        .args(&["--media", "fixed:200"])
        .up();
    let st = lab.state.clone();
    let media = &st["media"];
    assert_eq!(media["spec"], "fixed:200", "{st}");
    let mp = PathBuf::from(media["mountpoint"].as_str().unwrap());
    let mounted = mounts_at(&mp);
    assert!(
        mounted.len() == 1 && mounted[0].contains("fuse.storlab"),
        "{mounted:?}"
    );
    let media_pid = media["server"]["pid"].as_u64().unwrap() as i32;
    assert!(alive(media_pid));
    let dev = media["loop_dev"]["name"].as_str().unwrap().to_string();
    let store = mp.join("disk.img");
    let listed = loop_devices();
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("{dev}:")) && l.contains(&store.display().to_string())),
        "{dev} over {} not in losetup -a: {listed}",
        store.display()
    );
    assert_eq!(
        media["loop_dev"]["direct_io"], true,
        "loop devices over the FUSE mount take direct I/O here: {st}"
    );
    // Every server opens the store in the mount.
    assert_eq!(lab.url("local"), format!("file:{}", store.display()));
    assert_eq!(lab.url("block"), format!("file:{dev}"));
    let status = lab.cmd(&["status"]);
    let status = text(&status);
    assert!(
        status.contains("media: fixed:200 mounted at") && status.contains(&dev),
        "{status}"
    );
    // The block baseline in the FC and FCoE roles, derived from it.
    for (name, cap) in [("fc8", "fc=8gfc"), ("fcoe10", "fcoe=10gbe")] {
        assert!(
            status.contains(&format!("  {name:<6} file:{dev}?{cap}\n")),
            "{name}: {status}"
        );
    }

    // The media server sends each reply early by its own round trip, which
    // it measured at mount and names in its log ("… µs round trip charged"):
    // the client sees the medium's time, less at most that charge.
    let state_dir = PathBuf::from(st["state_dir"].as_str().expect("the state directory"));
    let log = std::fs::read_to_string(state_dir.join(storlab::lab::media::LOG)).unwrap_or_default();
    let charged_us: f64 = log
        .split(" µs round trip charged")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no round-trip charge in the media log: {log}"));
    assert!(
        (0.0..=200.0).contains(&charged_us),
        "charge {charged_us} µs"
    );
    let fc8 = format!("file:{dev}?fc=8gfc");
    for url in [fc8.as_str(), &lab.url("nfs3")] {
        let total = short_run(&lab, url);
        assert!(total["ios"].as_u64().unwrap() > 0, "{url}: no I/O: {total}");
        assert_eq!(total["errors"].as_u64(), Some(0), "{url}: {total}");
        // The timer sends a reply once its due time (the medium's, less the
        // charge) is within its lead, which follows how late its sleeps end
        // (on average on time) and never passes `Lead::MAX_NS`: the median
        // I/O takes at least the medium's time less the charge, and none
        // takes less than that and the longest lead.
        let floor = DELAY_US - charged_us;
        let p50 = total["p50_us"].as_f64().unwrap();
        assert!(
            p50 >= floor,
            "{url}: the median I/O took {p50} µs, under the medium's {DELAY_US} µs \
             less the {charged_us} µs charged: {total}"
        );
        let min = total["lat_min_us"].as_f64().unwrap();
        let lead_us = Lead::MAX_NS as f64 / 1e3;
        assert!(
            min >= floor - lead_us,
            "{url}: an I/O completed in {min} µs, under the medium's {DELAY_US} µs \
             less the {charged_us} µs charged and the timer's longest lead ({lead_us} µs): {total}"
        );
    }

    // compare names the FC baseline as the studies do, and it is the
    // baseline; FCoE goes by its own name beside it.
    let o = lab
        .storlab()
        .args(["compare", "--no-db", "--state-dir"])
        .arg(lab.dir.as_os_str())
        .args([
            "--targets",
            "fc8,fcoe10,nfs3",
            "--rw",
            "randread",
            "--bs",
            "4k",
        ])
        .args(["--size", "8m", "--ramp_time", "0", "--runtime", "1"])
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "compare: {out}");
    assert!(out.contains("relative to FC 8Gb (block) = 100"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("FCoE 10Gb (block) ")),
        "no FCoE row: {out}"
    );

    let servers: Vec<i32> = ["rpcbind", "ganesha", "tgtd", "nbdkit"]
        .iter()
        .map(|s| lab.pid(s))
        .collect();
    let o = lab.cmd(&["down"]);
    assert!(o.status.success(), "lab down: {}", text(&o));
    assert!(mounts_at(&mp).is_empty(), "{:?}", mounts_at(&mp));
    let listed = loop_devices();
    assert!(
        !listed.contains(&store.display().to_string()),
        "a loop device over the store is left: {listed}"
    );
    for pid in servers.into_iter().chain([media_pid]) {
        assert!(!alive(pid), "pid {pid} still runs after lab down");
    }
    assert!(!mp.exists(), "mount point {} left", mp.display());
}

/// Whether every chunk of the lab's backing file `path` holds its initial
/// content; the first chunk that does not, if any.
fn first_changed_chunk(path: &Path) -> Option<u64> {
    let disk = std::fs::read(path).unwrap();
    let mut want = vec![0u8; 1 << 20];
    disk.chunks(1 << 20).enumerate().find_map(|(i, got)| {
        let want = &mut want[..got.len()];
        storlab::workload::content::fill(
            want,
            storlab::workload::Content::Random,
            storlab::lab::backing::SEED,
            i as u64,
        );
        (got != want).then_some(i as u64)
    })
}

/// `compare` on the lab with a random-write workload of 8 MiB; its output.
fn compare_writes(lab: &Lab, targets: &str) -> String {
    let o = lab
        .storlab()
        .args(["compare", "--no-db", "--state-dir"])
        .arg(lab.dir.as_os_str())
        .args(["--targets", targets, "--rw", "randwrite", "--bs", "4k"])
        .args(["--size", "8m", "--ramp_time", "0", "--runtime", "1"])
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "compare: {out}");
    out
}

#[test]
fn compare_restores_only_what_was_written_through_the_media_layer() {
    let lab = Lab::builder("labdirty", "64m")
        .loopback()
        .args(&["--media", "fixed:50"])
        .up();
    let backing = PathBuf::from(lab.state["backing"]["path"].as_str().unwrap());
    assert_eq!(first_changed_chunk(&backing), None, "lab up filled it");
    let out = compare_writes(&lab, "fc8,nfs3");
    let notes: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("restored the backing store"))
        .collect();
    // Before nfs3, and at the end.
    assert_eq!(notes.len(), 2, "{out}");
    for n in notes {
        assert!(
            n.contains("of 64 MiB rewritten, the ranges written since the last restore"),
            "{n}"
        );
        // The writes stayed in the first 8 MiB: at most that was rewritten.
        let mib: f64 = n
            .split("store: ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no figure in {n:?}"));
        assert!(n.contains(" MiB of ") && mib > 0.0 && mib <= 8.0, "{n}");
    }
    assert_eq!(first_changed_chunk(&backing), None, "every byte restored");
    let mut marker = backing.clone().into_os_string();
    marker.push(".restoring");
    assert!(
        !Path::new(&marker).exists(),
        "a finished restore leaves no marker"
    );
    // A restore that stopped after taking the ranges (its marker left
    // behind): the next one cannot trust the map and rewrites everything.
    std::fs::write(&marker, "interrupted\n").unwrap();
    let out = compare_writes(&lab, "fc8,nfs3");
    let first = out
        .lines()
        .find(|l| l.contains("restored the backing store"))
        .unwrap_or_else(|| panic!("no restore note in {out}"));
    assert!(
        first.contains("all 64 MiB rewritten")
            && first.contains("an earlier restore did not finish"),
        "{first}"
    );
    assert!(
        !Path::new(&marker).exists(),
        "the marker is removed once restored"
    );
    assert_eq!(first_changed_chunk(&backing), None, "every byte restored");
    let o = lab.cmd(&["down"]);
    assert!(o.status.success(), "lab down: {}", text(&o));
}

#[test]
fn media_none_serves_the_backing_file_itself_and_down_keeps_nothing() {
    let lab = Lab::builder("labnone", "16m")
        .loopback()
        .args(&["--media", "none"])
        .up();
    let st = lab.state.clone();
    let backing = PathBuf::from(st["backing"]["path"].as_str().unwrap());
    assert_eq!(st["media"]["spec"], "none", "{st}");
    assert!(st["media"]["server"].is_null(), "no media server: {st}");
    assert_eq!(lab.url("local"), format!("file:{}", backing.display()));
    let dev = st["media"]["loop_dev"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = loop_devices();
    assert!(
        listed.lines().any(
            |l| l.starts_with(&format!("{dev}:")) && l.contains(&backing.display().to_string())
        ),
        "{dev} over {} not in losetup -a: {listed}",
        backing.display()
    );
    let status = lab.cmd(&["status"]);
    assert!(status.status.success(), "a healthy lab: {}", text(&status));
    assert!(text(&status).contains("media: none"), "{}", text(&status));
    for url in [lab.url("block"), lab.url("nbd")] {
        let total = short_run(&lab, &url);
        assert_eq!(total["errors"].as_u64(), Some(0), "{url}: {total}");
        assert!(total["ios"].as_u64().unwrap() > 0, "{url}: {total}");
    }
    // Nothing records the writes: compare restores the whole store.
    let out = compare_writes(&lab, "block,nbd");
    assert!(
        out.contains("restored the backing store: all 16 MiB rewritten (the written ranges are not known: no media layer"),
        "{out}"
    );
    assert_eq!(first_changed_chunk(&backing), None, "every byte restored");
    let o = lab.cmd(&["down"]);
    assert!(o.status.success(), "lab down: {}", text(&o));
    assert!(!backing.exists(), "{} left", backing.display());
    assert!(
        !loop_devices().contains(&backing.display().to_string()),
        "a loop device over the store is left"
    );
}

#[test]
fn a_media_layer_that_cannot_start_names_its_step_and_leaves_nothing() {
    support::assert_root("the lab needs root (network namespaces, mount(2))");
    let before = storlab_netns();

    // A spec no medium has: refused before anything is made.
    let lab = LabGuard::new("labmedia-bad");
    let o = lab.lab(&["up", "--net", "loopback", "--media", "nvme-typo"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("--media") && t.contains("\"nvme-typo\"") && t.contains("allowed"),
        "{t}"
    );
    assert!(!lab.dir.exists(), "state dir made for a refused spec");

    // A busy mount point: found after the namespace and the store were
    // made, which are taken down again; what was mounted there stays.
    let lab = LabGuard::new("labmedia-busy");
    let mp = lab.dir.join("media");
    std::fs::create_dir_all(&mp).unwrap();
    let _busy = Busy(lab.dir.clone());
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "storlab-test-busy"])
        .arg(&mp)
        .output()
        .unwrap();
    assert!(m.status.success(), "mount tmpfs: {}", text(&m));
    let backing = lab.dir.join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    let ports: Vec<String> = (0..4).map(|_| support::free_port().to_string()).collect();
    let o = lab.lab(&[
        "up",
        "--net",
        "loopback",
        "--media",
        "fixed:200",
        "--size",
        "8m",
        "--backing",
        "disk",
        "--backing-dir",
        backing.to_str().unwrap(),
        "--nfs-port",
        &ports[0],
        "--mountd-port",
        &ports[1],
        "--iscsi-port",
        &ports[2],
        "--nbd-port",
        &ports[3],
    ]);
    let t = text(&o);
    let still = mounts_at(&mp);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("media layer: mount point failed") && t.contains("busy"),
        "{t}"
    );
    assert!(
        still.len() == 1 && still[0].contains("tmpfs"),
        "the file system someone else mounted must stay: {still:?}"
    );
    // Namespaces made since are other labs' (each recorded by its slot);
    // ours would have no record left.
    for ns in storlab_netns().iter().filter(|n| !before.contains(n)) {
        let slot = ns.trim_start_matches("storlab");
        let rec = std::fs::read_to_string(format!("/var/lib/storlab/labs/{slot}"));
        assert!(
            rec.is_ok_and(|d| Path::new(d.trim()) != lab.dir),
            "namespace {ns} is left"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&backing).unwrap().flatten().collect();
    assert!(left.is_empty(), "the store is left: {left:?}");
    assert!(!lab.dir.join("state.json").exists(), "state left");
}

/// The test's own tmpfs on `DIR/media`, unmounted and `DIR` removed on drop,
/// whatever happened.
struct Busy(PathBuf);

impl Drop for Busy {
    fn drop(&mut self) {
        let mp = self.0.join("media");
        if !mounts_at(&mp).is_empty() {
            let _ = Command::new("umount").arg(&mp).output();
        }
        if mounts_at(&mp).is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn ctrl_c_during_up_takes_down_the_media_layer_too() {
    support::assert_root("the lab needs root (network namespaces, mount(2))");
    let lab = LabGuard::new("labmedia-int");
    let ports: Vec<String> = (0..4).map(|_| support::free_port().to_string()).collect();
    let child = support::storlab()
        .args(["lab", "up", "--net", "loopback", "--media", "fixed:200"])
        .args([
            "--size",
            "16m",
            "--nfs-port",
            &ports[0],
            "--mountd-port",
            &ports[1],
        ])
        .args([
            "--iscsi-port",
            &ports[2],
            "--nbd-port",
            &ports[3],
            "--state-dir",
        ])
        .arg(&lab.dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the loop device is recorded: the servers are still to come.
    let state = lab.dir.join("state.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let recorded = loop {
        let st = std::fs::read_to_string(&state).unwrap_or_default();
        if st.contains("\"loop_dev\": {") {
            break st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no loop device recorded: {st}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SAFETY: kill(2) on the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let st: serde_json::Value = serde_json::from_str(&recorded).unwrap();
    let t = text(&o);
    // rpcbind, ganesha, tgtd and nbdkit were still to start: up stopped.
    assert!(
        !o.status.success() && t.contains("lab up interrupted"),
        "{t}"
    );
    let media = &st["media"];
    let mp = PathBuf::from(media["mountpoint"].as_str().unwrap());
    assert!(mounts_at(&mp).is_empty(), "{:?}", mounts_at(&mp));
    let store = mp.join("disk.img").display().to_string();
    assert!(!loop_devices().contains(&store), "{}", loop_devices());
    let pid = media["server"]["pid"].as_u64().unwrap() as i32;
    assert!(!alive(pid), "media server {pid} still runs");
    assert!(!state.exists(), "state left");
}

#[test]
fn a_killed_media_server_shows_in_status_and_down_still_leaves_nothing() {
    let lab = Lab::builder("labmedia-kill", "16m")
        .loopback()
        .args(&["--media", "fixed:50"])
        .up();
    let media = lab.state["media"].clone();
    let mp = PathBuf::from(media["mountpoint"].as_str().unwrap());
    let pid = media["server"]["pid"].as_u64().unwrap() as i32;
    // SAFETY: kill(2) on the media server the lab recorded and reports running.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = lab.cmd(&["status"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("media server pid {pid} DEAD")), "{t}");
    assert_eq!(
        mounts_at(&mp).len(),
        1,
        "the dead mount outlives its server"
    );
    let servers: Vec<i32> = ["rpcbind", "ganesha", "tgtd", "nbdkit"]
        .iter()
        .map(|s| lab.pid(s))
        .collect();
    let o = lab.cmd(&["down"]);
    assert!(o.status.success(), "lab down: {}", text(&o));
    assert!(mounts_at(&mp).is_empty(), "{:?}", mounts_at(&mp));
    let store = mp.join("disk.img").display().to_string();
    assert!(!loop_devices().contains(&store), "{}", loop_devices());
    for pid in servers {
        assert!(!alive(pid), "pid {pid} still runs after lab down");
    }
}
