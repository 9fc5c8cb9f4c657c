//! The file and metadata workload (`storlab meta`, issue 15 item 4) on a
//! `file:` directory and over storlab's NFS client (v3, v4.0, v4.1) on the
//! lab: every operation type of the mix counted with its latency, the
//! large-file copy both ways, the clean-up removing only what storlab
//! created, and bad input as one line naming the option. The lab test needs
//! root and ./setup.sh's packages.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;
use support::lab::Lab;
use support::{TempDir, storlab, text};

const ALL: &str = "create=1,write=1,read=1,stat=1,rename=1,delete=1,list=1";
const OPS: [&str; 7] = [
    "create", "write", "read", "stat", "rename", "delete", "list",
];

/// storlab, recording its runs in a database of the tests' own (not the user's).
fn bin() -> std::process::Command {
    let mut c = storlab();
    c.env(
        "STORLAB_DB",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("meta-tests.db"),
    );
    c
}

fn meta(args: &[&str]) -> Output {
    let o = bin().arg("meta").args(args).output().unwrap();
    println!("storlab meta {}\n{}", args.join(" "), text(&o));
    o
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The count of each operation type in a report.
fn counts(doc: &serde_json::Value) -> Vec<(String, u64)> {
    doc["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["op"].as_str().unwrap().to_string(),
                o["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `storlab meta --copy SIZE --bs 256k` on `target`: both directions moved
/// `blocks` blocks at some rate.
fn copy_round_trip(target: &str, size: &str, blocks: u64, j: &Path) {
    let o = meta(&[
        "--target",
        target,
        "--copy",
        size,
        "--bs",
        "256k",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "copy on {target}: {}", text(&o));
    let doc = json(j);
    for dir in ["write", "read"] {
        assert_eq!(doc[dir]["blocks"].as_u64(), Some(blocks), "{target} {dir}");
        assert!(
            doc[dir]["mb_per_s"].as_f64().unwrap() > 0.0,
            "{target} {dir}"
        );
    }
}

/// Every operation of a run of the full mix was done, each with its
/// latency histogram, and the totals add up.
fn check_full_mix(doc: &serde_json::Value, tree: u64, what: &str) {
    let c = counts(doc);
    assert_eq!(c.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), OPS);
    for (op, n) in &c {
        assert!(*n > 0, "{what}: no {op}");
    }
    for o in doc["ops"].as_array().unwrap() {
        assert_eq!(o["histogram"]["count"], o["count"], "{what}: {}", o["op"]);
        assert!(o["latency"]["p50_us"].as_f64().unwrap() > 0.0, "{what}");
        assert!(
            o["latency"]["max_us"].as_f64().unwrap() >= o["latency"]["p99_us"].as_f64().unwrap(),
            "{what}"
        );
    }
    let total: u64 = c.iter().map(|x| x.1).sum();
    assert_eq!(doc["total_ops"].as_u64().unwrap(), total, "{what}");
    assert!(doc["total_ops_per_s"].as_f64().unwrap() > 0.0, "{what}");
    assert_eq!(doc["setup"]["files"].as_u64().unwrap(), tree, "{what}");
    // The clean-up removed every file left: the tree, plus creates, less deletes.
    let get = |op: &str| c.iter().find(|x| x.0 == op).unwrap().1;
    assert_eq!(
        doc["cleanup"]["files"].as_u64().unwrap(),
        tree + get("create") - get("delete"),
        "{what}"
    );
}

#[test]
fn meta_on_a_file_directory_removes_only_its_own() {
    let d = TempDir::new("meta", "file");
    let out = TempDir::new("meta", "out");
    std::fs::write(d.join("keep.txt"), b"not storlab's").unwrap();
    std::fs::create_dir(d.join("theirs")).unwrap();
    std::fs::write(d.join("theirs/a.txt"), b"theirs").unwrap();
    std::fs::create_dir(d.join("empty")).unwrap();
    let target = format!("file:{}", d.path().display());
    let before = names(d.path());

    let j = out.join("full.json");
    let o = meta(&[
        "--target",
        &target,
        "--dirs",
        "3",
        "--files",
        "10",
        "--file-size",
        "1k",
        "--mix",
        ALL,
        "--threads",
        "2",
        "--runtime",
        "1",
        "--name",
        "run1",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let doc = json(&j);
    check_full_mix(&doc, 30, "file:");
    assert_eq!(
        doc["client"].as_str().unwrap(),
        format!("local directory {}", d.path().display())
    );
    assert!(text(&o).contains("create"), "the text table");
    assert_eq!(
        names(d.path()),
        before,
        "the run directory is gone, nothing else is"
    );
    assert_eq!(std::fs::read(d.join("keep.txt")).unwrap(), b"not storlab's");

    // Operations of weight 0 never run.
    let j = out.join("reads.json");
    let o = meta(&[
        "--target",
        &target,
        "--dirs",
        "2",
        "--files",
        "5",
        "--mix",
        "read=3,stat=1",
        "--threads",
        "1",
        "--runtime",
        "0.3",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    for (op, n) in counts(&json(&j)) {
        assert_eq!(n > 0, op == "read" || op == "stat", "{op}: {n}");
    }

    // A non-empty run directory is refused unless --reuse-dir; reused, only
    // storlab's own entries come and go.
    let o = meta(&["--target", &target, "--name", "theirs", "--runtime", "0.2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("theirs") && err.contains("--reuse-dir"),
        "{err}"
    );
    for name in ["theirs", "empty"] {
        let mut args = vec![
            "--target", &target, "--name", name, "--dirs", "2", "--files", "3",
        ];
        args.extend(["--mix", ALL, "--runtime", "0.3"]);
        if name == "theirs" {
            args.push("--reuse-dir");
        }
        let o = meta(&args);
        assert!(o.status.success(), "{name}: {}", text(&o));
    }
    assert_eq!(names(&d.join("theirs")), ["a.txt"]);
    assert_eq!(std::fs::read(d.join("theirs/a.txt")).unwrap(), b"theirs");
    assert!(
        names(&d.join("empty")).is_empty(),
        "an empty directory it did not make stays"
    );
    assert_eq!(names(d.path()), before);

    // --keep leaves the tree; the copy writes, reads back and removes its file.
    let o = meta(&[
        "--target",
        &target,
        "--name",
        "kept",
        "--dirs",
        "2",
        "--files",
        "4",
        "--runtime",
        "0.2",
        "--mix",
        "stat=1",
        "--keep",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(names(&d.join("kept")), ["d0000", "d0001"]);
    assert_eq!(names(&d.join("kept/d0001")).len(), 4);
    std::fs::remove_dir_all(d.join("kept")).unwrap();
    copy_round_trip(&target, "3m", 12, &out.join("copy.json"));
    assert_eq!(names(d.path()), before);
}

#[test]
fn bad_input_is_one_line_naming_the_option() {
    let d = TempDir::new("meta", "bad");
    let target = format!("file:{}", d.path().display());
    for (args, says) in [
        (
            vec!["--mix", "create=1,chmod=1"],
            "invalid --mix \"create=1,chmod=1\": unknown operation \"chmod\" (allowed: create, write, read, stat, rename, delete, list)",
        ),
        (
            vec!["--dirs", "0"],
            "invalid --dirs \"0\" (allowed: 1 to 100000)",
        ),
        (
            vec!["--threads", "x"],
            "invalid --threads \"x\" (allowed: 1 to 1024)",
        ),
        (
            vec!["--file-size", "4q"],
            "--file-size: invalid size \"4q\"",
        ),
        (
            vec!["--runtime", "soon"],
            "--runtime: invalid duration \"soon\"",
        ),
        (vec!["--name", "a/b"], "invalid --name \"a/b\""),
    ] {
        let mut all = vec!["--target", target.as_str()];
        all.extend(&args);
        let o = meta(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    for (t, says) in [
        (
            "iscsi://h/iqn.2025-01.x:y/1",
            "the metadata workload runs on directories",
        ),
        (
            "file:/nonexistent/storlab-meta",
            "is not an existing directory",
        ),
        ("nfs://h/?version=3", "nfs:// needs /EXPORT[/DIR]"),
        (
            "nfs://h/e?version=5",
            "invalid version=\"5\" (allowed: 3, 4, 4.0, 4.1)",
        ),
    ] {
        let o = meta(&["--target", t]);
        assert_eq!(o.status.code(), Some(2), "{t}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("invalid --target \"{t}\"")), "{err}");
        assert!(err.contains(says), "{t}: {err}");
        assert!(err.contains("allowed: file:DIR, nfs://"), "{t}: {err}");
    }
    assert!(names(d.path()).is_empty(), "bad input created nothing");
}

#[test]
fn meta_over_nfs_v3_v4_v41_on_the_lab() {
    support::assert_root("the lab needs root");
    let lab = Lab::builder("meta", "64m").loopback().up();
    let out = TempDir::new("meta", "nfs");
    // The export's directory, as the lab's own file target sees it.
    let local = lab.url("local");
    let export_dir = Path::new(local.strip_prefix("file:").unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::write(export_dir.join("precious.txt"), b"not storlab's").unwrap();
    let before = names(&export_dir);
    let nfs3 = lab.url("nfs3");
    let file = nfs3.split('?').next().unwrap().rsplit('/').next().unwrap();
    let dir_url = nfs3.replacen(&format!("/{file}"), "", 1);
    for (v, client) in [("3", "NFSv3"), ("4", "NFSv4.0"), ("4.1", "NFSv4.1")] {
        let url = dir_url.replace("version=3", &format!("version={v}"));
        let j = out.join(&format!("v{v}.json"));
        let started = std::time::Instant::now();
        let o = meta(&[
            "--target",
            &url,
            "--dirs",
            "3",
            "--files",
            "10",
            "--file-size",
            "8k",
            "--mix",
            ALL,
            "--threads",
            "2",
            "--runtime",
            "1",
            "--json",
            j.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "version={v}: {}", text(&o));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "version={v} took too long"
        );
        let doc = json(&j);
        check_full_mix(&doc, 30, &url);
        let c = doc["client"].as_str().unwrap();
        assert!(c.contains(client), "{c}");
        assert_eq!(names(&export_dir), before, "version={v}: clean-up");

        copy_round_trip(&url, "4m", 16, &out.join(&format!("copy{v}.json")));
        assert_eq!(names(&export_dir), before, "version={v}: copy clean-up");
    }
    // The lab's targets by name: the root of the export.
    let state_dir = lab.state["state_dir"].as_str().unwrap().to_string();
    for (name, client) in [("nfs3", "NFSv3"), ("nfs41", "NFSv4.1")] {
        let j = out.join(&format!("{name}.json"));
        let o = meta(&[
            "--target",
            name,
            "--state-dir",
            &state_dir,
            "--dirs",
            "2",
            "--files",
            "5",
            "--mix",
            ALL,
            "--threads",
            "1",
            "--runtime",
            "1",
            "--json",
            j.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "--target {name}: {}", text(&o));
        let c = json(&j)["client"].as_str().unwrap().to_string();
        assert!(c.contains(client), "{name}: {c}");
        assert_eq!(names(&export_dir), before, "{name}: clean-up");
    }
    let o = meta(&[
        "--target",
        "nfs3",
        "--state-dir",
        "/nonexistent/storlab-lab",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains("invalid --target \"nfs3\": no lab is up in /nonexistent/storlab-lab"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(export_dir.join("precious.txt")).unwrap(),
        b"not storlab's"
    );
    std::fs::remove_file(export_dir.join("precious.txt")).unwrap();
    lab.down_clean();
}

#[test]
fn an_interrupted_run_still_cleans_up() {
    let d = TempDir::new("meta", "sigint");
    let target = format!("file:{}", d.path().display());
    let child = bin()
        .args([
            "meta",
            "--target",
            &target,
            "--runtime",
            "60",
            "--threads",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run directory exists (the run has started), then SIGINT.
    let t0 = std::time::Instant::now();
    while names(d.path()).is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) with a PID this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "SIGINT did not end the run"
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("interrupted") && err.contains("removed"),
        "{err}"
    );
    assert!(
        names(d.path()).is_empty(),
        "the clean-up ran: {:?}",
        names(d.path())
    );
}
