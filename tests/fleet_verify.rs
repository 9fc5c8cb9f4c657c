//! Verify mode on a fleet: two agents on 127.0.0.1 run their shares of one
//! sliced file target with `--verify`; each saves its own block map (the
//! controller says where), `storlab verify --map` with a host's map finds
//! exactly the blocks flipped in that host's slices, and a verifying read run
//! fails with every bad block counted and merged at the controller. With
//! `--journal FILE` each agent writes its own `FILE.agent-NAME`, and
//! `storlab verify --journal` on a host's journal finds exactly the
//! acknowledged write destroyed in that host's slice. Layouts and options
//! that cannot work on a fleet are refused, naming them.

mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::agent::AgentProc;
use support::corrupt::{VBLOCK, flip_bits, reported};
use support::{TempDir, storlab, text};

const TOKEN: &str = "fleet-verify-token-0123456789";
/// Size of one VM disk's slice.
const SLICE: u64 = 1 << 20;
/// VMs: slice `v` of the file belongs to VM `v`, dealt to host `v % 2`.
const VMS: u64 = 4;

struct Fleet {
    dir: TempDir,
    agents: Vec<AgentProc>,
}

impl Fleet {
    /// Two agents allowed to touch `dir/data`, sharing one verify state
    /// directory (their maps must not collide).
    fn new(tag: &str) -> Fleet {
        let dir = TempDir::new("fleet-verify", tag);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("token"), format!("{TOKEN}\n")).unwrap();
        let state = dir.join("agent-state");
        let agents = (0..2)
            .map(|i| {
                AgentProc::start_with_env(
                    &format!("agent{i}"),
                    &[("STORLAB_VERIFY_DIR", state.as_os_str())],
                    [
                        OsStr::new("--token-file"),
                        dir.join("token").as_os_str(),
                        OsStr::new("--allow"),
                        dir.join("data").as_os_str(),
                    ],
                )
            })
            .collect();
        Fleet { dir, agents }
    }

    fn file(&self) -> PathBuf {
        self.dir.join("data").join("disk")
    }

    fn target(&self) -> String {
        format!("file:{}", self.file().display())
    }

    fn hosts(&self) -> String {
        let a: Vec<&str> = self.agents.iter().map(|a| a.addr.as_str()).collect();
        a.join(",")
    }

    /// storlab with the controller's own verify state and results database
    /// in the test directory.
    fn storlab(&self, args: &[&str]) -> Output {
        storlab()
            .env("STORLAB_VERIFY_DIR", self.dir.join("controller-state"))
            .env("STORLAB_DB", self.dir.join("results.db"))
            .args(args)
            .output()
            .expect("run storlab")
    }

    /// Create the data file once, on this host, so that the two agents (one
    /// host) do not race to create it; they reuse it.
    fn prepare(&self) {
        let (size, vms) = (SLICE.to_string(), VMS.to_string());
        let o = self.storlab(&[
            "run",
            "--target",
            &self.target(),
            "--rw",
            "read",
            "--size",
            &size,
            "--vms",
            &vms,
            "--runtime",
            "1",
            "--no-db",
            "-q",
        ]);
        assert!(o.status.success(), "prepare: {}", text(&o));
    }

    /// A fleet run over every block of every slice once, sequentially, in
    /// verify mode; returns its output and its point.
    fn run(&self, rw: &str, json: &str, extra: &[&str]) -> (Output, Value) {
        let json = self.dir.join(json);
        let (size, vms) = (SLICE.to_string(), VMS.to_string());
        let (hosts, token, target) = (self.hosts(), self.dir.join("token"), self.target());
        let mut args = vec![
            "run",
            "--hosts",
            &hosts,
            "--token-file",
            token.to_str().unwrap(),
            "--target",
            &target,
            "--rw",
            rw,
            "--bs",
            "64k",
            "--size",
            &size,
            "--io_size",
            &size,
            "--vms",
            &vms,
            "--runtime",
            "60",
            "--verify",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = self.storlab(&args);
        let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
            .unwrap_or_else(|_| panic!("no JSON result: {}", text(&o)));
        (o, doc["jobs"][0]["points"][0].clone())
    }
}

/// Flip one bit in each of `n` distinct blocks of slice `slice`; returns
/// their offsets.
fn corrupt(path: &Path, slice: u64, n: usize, seed: u64) -> BTreeSet<u64> {
    flip_bits(path, slice * SLICE, SLICE, n, seed)
}

fn verify_errors(intervals: &Value) -> u64 {
    intervals
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["stats"]["verify_errors"].as_u64().unwrap_or(0))
        .sum()
}

/// Host `h`'s one saved map, from the result.
fn host_map(p: &Value, h: usize) -> (String, PathBuf) {
    host_file(p, h, "verify_maps")
}

/// Host `h`'s one entry of `hosts[h][key]` (a target and the file saved for
/// it on that host), from the result.
fn host_file(p: &Value, h: usize, key: &str) -> (String, PathBuf) {
    let files = p["hosts"][h][key]
        .as_array()
        .unwrap_or_else(|| panic!("host {h} reports no {key}: {}", p["hosts"][h]));
    assert_eq!(files.len(), 1, "one target, one file: {files:?}");
    (
        files[0]["target"].as_str().unwrap().to_string(),
        PathBuf::from(files[0]["path"].as_str().unwrap()),
    )
}

#[test]
fn verify_on_a_fleet_saves_a_map_per_host_and_finds_every_flipped_block() {
    let f = Fleet::new("maps");
    f.prepare();

    // Every block of every slice written once, by the host its VM went to.
    let (o, p) = f.run("write", "write.json", &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(p["error"].is_null(), "{t}");
    assert_eq!(verify_errors(&p["intervals"]), 0);
    let written = VMS * SLICE;
    let bytes: u64 = p["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["stats"]["write"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(bytes, written, "every block written once: {t}");
    let maps: Vec<(String, PathBuf)> = (0..2).map(|h| host_map(&p, h)).collect();
    assert_ne!(
        maps[0].1, maps[1].1,
        "two agents on one host keep a map each"
    );
    for (h, (target, path)) in maps.iter().enumerate() {
        assert_eq!(target, &f.target());
        assert!(path.is_file(), "host {h}'s map {} exists", path.display());
        assert!(
            path.starts_with(f.dir.join("agent-state")),
            "saved where the agent's STORLAB_VERIFY_DIR says: {}",
            path.display()
        );
        // The controller says where, per host, and how to re-check there.
        let host = &f.agents[h].addr;
        let line = t
            .lines()
            .find(|l| l.contains(&format!("host {host}: verify map of")))
            .unwrap_or_else(|| panic!("no map line for {host}: {t}"));
        assert!(
            line.contains(&format!(
                "storlab verify {} --map {}",
                f.target(),
                path.display()
            )),
            "{line}"
        );
    }

    // Each host's map holds exactly its own slices: VMs 0, 2 on host 0 and
    // 1, 3 on host 1, two slices each.
    let check = |map: &Path| {
        f.storlab(&[
            "verify",
            "--show",
            "1000",
            &f.target(),
            "--map",
            map.to_str().unwrap(),
        ])
    };
    for (_, map) in &maps {
        let o = check(map);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains(&format!("verified {} block(s)", 2 * SLICE / VBLOCK)),
            "{t}"
        );
        assert!(t.contains(": 0 bad"), "{t}");
    }

    // Flip bits in host 1's slices (VMs 1 and 3): its map finds exactly
    // those blocks, with their offsets; host 0's map, which never covered
    // them, still finds nothing.
    let flip = |slices: &[u64]| -> BTreeSet<u64> {
        slices
            .iter()
            .flat_map(|&s| corrupt(&f.file(), s, 3 + s as usize, 0x51CE ^ s))
            .collect()
    };
    let flipped1 = flip(&[1, 3]);
    let o = check(&maps[0].1);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(": 0 bad"), "{}", text(&o));
    let o = check(&maps[1].1);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!(": {} bad", flipped1.len())), "{t}");
    assert_eq!(reported(&t), flipped1, "host 1: {t}");

    // A verifying read run over every block fails: host 1 counts each bad
    // block, the controller merges the count and fails the run as a local
    // run fails. (One engine thread per host, so that no thread ends its
    // share early: as on one host, a thread that ends with bad reads stops
    // the others, and on a fleet a host that does stops the other hosts.)
    // The run saves new maps over these (as a new local run does): keep
    // host 0's for the last check.
    let map0 = f.dir.join("host0-write.map");
    std::fs::copy(&maps[0].1, &map0).unwrap();
    let (o, p) = f.run("read", "read.json", &["--threads", "1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "a bad read fails the run: {t}");
    assert_eq!(verify_errors(&p["intervals"]), flipped1.len() as u64, "{t}");
    assert_eq!(verify_errors(&p["hosts"][0]["intervals"]), 0, "{t}");
    assert!(p["hosts"][0]["error"].is_null(), "{t}");
    let h1 = &p["hosts"][1];
    assert_eq!(
        verify_errors(&h1["intervals"]),
        flipped1.len() as u64,
        "{t}"
    );
    let e = h1["error"].as_str().unwrap_or_default();
    assert!(
        e.contains(&format!("verify: {} bad block(s) read", flipped1.len())),
        "{e}"
    );
    // As on one host: the first bad block, with its offset and headers.
    let first = e
        .split(" at offset ")
        .nth(1)
        .and_then(|r| r.split(':').next()?.trim().parse::<u64>().ok());
    assert!(
        first.is_some_and(|o| flipped1.contains(&o)),
        "host 1 names a flipped block: {e}"
    );
    assert!(e.contains("expected") && e.contains("found"), "{e}");
    let pe = p["error"].as_str().unwrap();
    assert!(
        pe.contains(&format!("host {}: verify:", f.agents[1].addr)),
        "{pe}"
    );
    assert!(t.contains(pe), "the controller prints it: {t}");
    // Each bad block host 1 printed (all of them: fewer than 20 on its one
    // thread) is printed by the controller too, naming the host.
    assert_eq!(reported(&t), flipped1, "{t}");
    let from_host1 = format!("(host {})", f.agents[1].addr);
    assert!(
        t.lines()
            .filter(|l| l.starts_with("storlab: verify: "))
            .all(|l| l.ends_with(&from_host1)),
        "{t}"
    );

    // Now host 0's slices: its map finds exactly those, not host 1's.
    let flipped0 = flip(&[0, 2]);
    let o = check(&map0);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!(": {} bad", flipped0.len())), "{t}");
    assert_eq!(reported(&t), flipped0, "host 0: {t}");
}

/// Host `h`'s journal, from the result: one target, one file.
fn host_journal(p: &Value, h: usize) -> (String, PathBuf) {
    host_file(p, h, "verify_journals")
}

#[test]
fn journal_on_a_fleet_is_one_file_per_host_and_finds_a_destroyed_write() {
    let f = Fleet::new("journal");
    f.prepare();

    let journal = f.dir.join("data").join("j.jrnl");
    let (o, p) = f.run(
        "write",
        "journal.json",
        &["--sync", "dsync", "--journal", journal.to_str().unwrap()],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(p["error"].is_null(), "{t}");
    let journals: Vec<(String, PathBuf)> = (0..2).map(|h| host_journal(&p, h)).collect();
    for (h, (target, path)) in journals.iter().enumerate() {
        assert_eq!(target, &f.target());
        // Each agent's own file, named after it, next to FILE on its host.
        let mut expect = journal.clone().into_os_string();
        expect.push(format!(".agent-agent{h}"));
        assert_eq!(path, &PathBuf::from(expect), "host {h}");
        assert!(
            path.is_file(),
            "host {h}'s journal {} exists",
            path.display()
        );
        let host = &f.agents[h].addr;
        let line = t
            .lines()
            .find(|l| l.contains(&format!("host {host}: journal of")))
            .unwrap_or_else(|| panic!("no journal line for {host}: {t}"));
        assert!(
            line.contains(&format!(
                "storlab verify {} --journal {}",
                f.target(),
                path.display()
            )),
            "{line}"
        );
    }
    assert!(
        !journal.exists(),
        "no agent appends to the shared name itself"
    );

    let check = |j: &Path| {
        f.storlab(&[
            "verify",
            "--show",
            "1000",
            &f.target(),
            "--journal",
            j.to_str().unwrap(),
        ])
    };
    // Each host's journal holds its two slices' acknowledged writes.
    for (_, j) in &journals {
        let o = check(j);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains(&format!("verified {} block(s)", 2 * SLICE / VBLOCK)),
            "{t}"
        );
        assert!(t.contains(": 0 bad"), "{t}");
    }

    // Destroy one acknowledged 64 KiB write in slice 1 (VM 1, host 1):
    // zeros over it. Host 1's journal reports exactly its blocks; host 0's
    // never covered them.
    let write_at = SLICE + 3 * 65536;
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(f.file())
            .unwrap();
        file.seek(SeekFrom::Start(write_at)).unwrap();
        file.write_all(&[0u8; 65536]).unwrap();
        file.sync_all().unwrap();
    }
    let destroyed: BTreeSet<u64> = (0..65536 / VBLOCK).map(|b| write_at + b * VBLOCK).collect();
    let o = check(&journals[0].1);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(": 0 bad"), "{}", text(&o));
    let o = check(&journals[1].1);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!(": {} bad", destroyed.len())), "{t}");
    assert_eq!(reported(&t), destroyed, "host 1: {t}");
}

#[test]
fn verify_on_a_fleet_refuses_a_shared_layout_and_a_journal_naming_them() {
    let f = Fleet::new("refuse");
    let token = f.dir.join("token");
    let base = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--hosts",
            &f.agents[0].addr,
            "--token-file",
            token.to_str().unwrap(),
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--size",
            "1m",
            "--runtime",
            "1",
            "--no-db",
        ];
        let target = f.target();
        args.extend_from_slice(&["--target", &target]);
        args.extend_from_slice(extra);
        let o = f.storlab(&args);
        (o.status.code(), text(&o))
    };
    let (code, t) = base(&["--verify", "--disk_layout", "shared"]);
    assert_eq!(code, Some(2), "{t}");
    for part in ["--verify", "--hosts", "--disk_layout", "slice", "shared"] {
        assert!(t.contains(part), "{part} missing: {t}");
    }
    let journal = f.dir.join("data").join("j");
    let (code, t) = base(&[
        "--journal",
        journal.to_str().unwrap(),
        "--sync",
        "dsync",
        "--disk_layout",
        "shared",
    ]);
    assert_eq!(code, Some(2), "{t}");
    for part in ["--journal", "--hosts", "--disk_layout", "slice", "shared"] {
        assert!(t.contains(part), "{part} missing: {t}");
    }
    let (code, t) = base(&["--journal", "rel.jrnl", "--sync", "dsync"]);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("--journal rel.jrnl") && t.contains("absolute"),
        "{t}"
    );
    assert!(!journal.exists(), "no journal was written");
    assert!(!f.file().exists(), "nothing was prepared");
}
