//! Verify mode on a file target: an injected corruption (bytes flipped in the
//! backing file between the write and the read) is detected in every corrupted
//! block, by `storlab verify` and by a verifying read run, with the offsets
//! reported; an untouched file reports zero errors; the journal round-trips.

mod support;

use std::collections::BTreeSet;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::corrupt::{VBLOCK, flip_bits, reported};
use support::text;

const SIZE: u64 = 4 << 20;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("storlab-verify-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    fn file(&self) -> PathBuf {
        self.0.join("data")
    }
    fn target(&self) -> String {
        format!("file:{}", self.file().display())
    }
    /// storlab with this directory's verify state and no results database.
    fn storlab(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .env("STORLAB_VERIFY_DIR", self.0.join("state"))
            .args(args)
            .output()
            .expect("run storlab")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One pass of `rw` (write, read) over the whole file in `bs` blocks, in
/// verify mode, with `extra` arguments.
fn verify_pass(d: &Dir, rw: &str, bs: &str, extra: &[&str]) -> Output {
    let size = format!("{SIZE}");
    let target = d.target();
    let mut args = vec![
        "run",
        "--target",
        &target,
        "--rw",
        rw,
        "--bs",
        bs,
        "--size",
        &size,
        "--io_size",
        &size,
        "--runtime",
        "60",
        "--verify",
        "--no-db",
        "-q",
    ];
    args.extend_from_slice(extra);
    d.storlab(&args)
}

/// Write every block of the file once, sequentially, in verify mode.
fn write_all(d: &Dir, extra: &[&str]) {
    let o = verify_pass(d, "write", "64k", extra);
    assert!(o.status.success(), "write phase failed: {}", text(&o));
}

/// Flip one bit in each of `n` distinct random blocks; returns the block offsets.
fn corrupt(path: &Path, n: usize, seed: u64) -> BTreeSet<u64> {
    flip_bits(path, 0, SIZE, n, seed)
}

#[test]
fn an_untouched_file_verifies_with_zero_errors() {
    let d = Dir::new("clean");
    write_all(&d, &[]);
    let o = d.storlab(&["verify", &d.target()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!("verified {} block(s)", SIZE / VBLOCK)),
        "{t}"
    );
    assert!(t.contains(": 0 bad"), "{t}");
}

#[test]
fn every_corrupted_block_is_detected_by_storlab_verify_with_its_offset() {
    let d = Dir::new("corrupt");
    write_all(&d, &[]);
    for (round, n) in [(1u64, 1usize), (2, 7), (3, 40)] {
        // Rewrite, so every round starts from a clean file.
        if round > 1 {
            write_all(&d, &[]);
        }
        let flipped = corrupt(&d.file(), n, 0x9E37_79B9 ^ round);
        let o = d.storlab(&["verify", "--show", "1000", &d.target()]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(t.contains(&format!(": {n} bad")), "round {round}: {t}");
        assert_eq!(reported(&t), flipped, "round {round}: {t}");
    }
}

#[test]
fn a_verifying_read_run_detects_every_corrupted_block_and_counts_them() {
    let d = Dir::new("readrun");
    write_all(&d, &[]);
    let flipped = corrupt(&d.file(), 12, 77);
    let json = d.0.join("read.json");
    let o = verify_pass(&d, "read", "4k", &["--json", json.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a bad read must fail the run: {t}"
    );
    assert!(t.contains("bad block(s) read"), "{t}");
    // Up to 20 are printed in full per engine thread; all are counted.
    let shown = reported(&t);
    assert!(!shown.is_empty() && shown.is_subset(&flipped), "{t}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let counted: u64 = v["jobs"][0]["points"][0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["stats"]["verify_errors"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(counted, flipped.len() as u64, "{t}");
}

#[test]
fn reads_of_blocks_never_written_are_checked_against_the_prepared_content() {
    let d = Dir::new("prepared");
    // A read-only verify run over a freshly prepared file: all prepared content.
    let run = |d: &Dir| verify_pass(d, "read", "8k", &[]);
    let o = run(&d);
    assert!(o.status.success(), "{}", text(&o));
    // Damage the prepared content: the next verifying read finds it.
    let flipped = corrupt(&d.file(), 3, 5);
    let o = run(&d);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert_eq!(reported(&t), flipped, "{t}");
    assert!(
        t.contains("neither prepared content nor a verify block"),
        "{t}"
    );
}

#[test]
fn a_journal_of_synchronous_writes_verifies_and_a_lost_write_is_found() {
    let d = Dir::new("journal");
    let journal = d.0.join("writes.jrnl");
    let size = format!("{SIZE}");
    let o = d.storlab(&[
        "run",
        "--target",
        &d.target(),
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--size",
        &size,
        "--runtime",
        "1",
        "--iodepth",
        "8",
        "--sync",
        "dsync",
        "--journal",
        journal.to_str().unwrap(),
        "--no-db",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = d.storlab(&[
        "verify",
        "--journal",
        journal.to_str().unwrap(),
        &d.target(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(": 0 bad"), "{t}");
    // Put the prepared content back over one journaled block: a lost write.
    let content = std::fs::read(d.file()).unwrap();
    let block = content
        .chunks(VBLOCK as usize)
        .position(|b| b.starts_with(b"STLBVRFY"))
        .expect("a written block") as u64;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.file())
        .unwrap();
    f.seek(SeekFrom::Start(block * VBLOCK)).unwrap();
    f.write_all(&[0u8; VBLOCK as usize]).unwrap();
    drop(f);
    let o = d.storlab(&[
        "verify",
        "--journal",
        journal.to_str().unwrap(),
        &d.target(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("lost write"), "{t}");
    assert_eq!(reported(&t), BTreeSet::from([block * VBLOCK]), "{t}");
}

#[test]
fn verify_refuses_unaligned_sizes_and_journal_without_sync_naming_the_option() {
    let d = Dir::new("refuse");
    let o = d.storlab(&[
        "run",
        "--target",
        &d.target(),
        "--rw",
        "randwrite",
        "--bs",
        "1000",
        "--size",
        "1m",
        "--runtime",
        "1",
        "--verify",
        "--no-db",
        "-q",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("multiples of 512"), "{t}");
    let o = d.storlab(&[
        "run",
        "--target",
        &d.target(),
        "--rw",
        "randwrite",
        "--size",
        "1m",
        "--runtime",
        "1",
        "--journal",
        d.0.join("j").to_str().unwrap(),
        "--no-db",
        "-q",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--journal needs synchronous writes"), "{t}");
    let o = d.storlab(&["verify", "file:/nonexistent/storlab-x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no saved verify map"), "{}", text(&o));
}

#[test]
fn many_workers_on_one_small_shared_region_never_race_on_a_block() {
    // 8 workers on 2 engine threads, all over the same 64 KiB: without the
    // per-block in-flight lock, two writes to one block could complete in
    // one order and land in the other, and the checks would report stale data.
    let d = Dir::new("shared");
    let target = d.target();
    let o = d.storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "randrw",
        "--bssplit",
        "4k/50:8k/25:512/25",
        "--blockalign",
        "512",
        "--size",
        "64k",
        "--disk_layout",
        "shared",
        "--vms",
        "4",
        "--numjobs",
        "2",
        "--iodepth",
        "4",
        "--threads",
        "2",
        "--runtime",
        "2",
        "--verify",
        "--no-db",
        "-q",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let o = d.storlab(&["verify", &target]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!("verified {} block(s)", (64 << 10) / VBLOCK)),
        "{t}"
    );
}

#[test]
fn the_map_is_saved_when_the_run_is_interrupted() {
    let d = Dir::new("sigint");
    let target = d.target();
    let child = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .env("STORLAB_VERIFY_DIR", d.0.join("state"))
        .args([
            "run",
            "--target",
            &target,
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--runtime",
            "60",
            "--verify",
            "--no-db",
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let o = d.storlab(&["verify", &target]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(": 0 bad") && !t.contains("verified 0 block"),
        "{t}"
    );
}
