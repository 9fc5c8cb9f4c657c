//! NFSv4.1 (issue 14, item 2) against the lab's nfs-ganesha: its `nfs41`
//! target runs a verified 4 KiB random read/write workload, a verified sync
//! write workload (FILE_SYNC) and the random workload over four connections
//! bound to the session (`nconnect=4`), each with zero I/O errors and zero
//! bad blocks, on a session whose slot table is the queue depth; a version
//! storlab does not speak is one line naming the option and the allowed
//! values. Needs root and ./setup.sh's packages.

mod support;

use std::time::Duration;
use support::TempDir;
use support::lab::Lab;
use support::run::{Run, total};

/// A verified run of `args` on `url`: exit 0, at least 100 I/Os, no I/O
/// error, no bad block. Returns the backend line of the run.
fn verified(lab: &Lab, dir: &TempDir, url: &str, tag: &str, args: &[&str]) -> String {
    let mut cmd = lab.storlab();
    cmd.env("STORLAB_VERIFY_DIR", dir.join(&format!("verify-{tag}")));
    let mut all = vec![
        "--target",
        url,
        "--bs",
        "4k",
        "--size",
        "16m",
        "--verify",
        "--io-timeout",
        "10s",
    ];
    all.extend_from_slice(args);
    let mut run = Run::start_cmd(cmd, dir.path(), tag, &all);
    let (status, err, _) = run.wait(Duration::from_secs(120), tag);
    assert!(status.success(), "{tag} on {url}: {err}");
    let doc = run.doc();
    let ios = total(&doc, "read", "ios") + total(&doc, "write", "ios");
    assert!(ios >= 100, "{tag} on {url}: {ios} I/Os");
    for d in ["read", "write"] {
        assert_eq!(total(&doc, d, "errors"), 0, "{tag} on {url}: {d} errors");
    }
    assert_eq!(total(&doc, "", "verify_errors"), 0, "{tag}: bad blocks");
    let backend = doc["jobs"][0]["points"][0]["backend"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    println!("{tag} on {url}: {ios} I/Os, 0 errors, 0 bad blocks ({backend})");
    backend
}

#[test]
fn nfs41_on_the_lab() {
    support::assert_root("the lab needs root");
    let lab = Lab::builder("nfs41", "64m").loopback().up();
    let dir = TempDir::new("nfs41", "runs");
    let url = lab.url("nfs41");
    assert!(url.ends_with("?version=4.1"), "{url}");

    let randrw = ["--rw", "randrw", "--iodepth", "16", "--runtime", "3"];
    let backend = verified(&lab, &dir, &url, "randrw", &randrw);
    assert!(
        backend.contains("NFSv4.1 (session of 16 slots)"),
        "{backend}"
    );

    let sync = [
        "--rw",
        "randwrite",
        "--sync",
        "dsync",
        "--iodepth",
        "4",
        "--runtime",
        "2",
        "--offset",
        "16m",
    ];
    let backend = verified(&lab, &dir, &url, "syncwrite", &sync);
    assert!(
        backend.contains("NFSv4.1 (session of 4 slots)") && backend.contains("FILE_SYNC"),
        "{backend}"
    );

    let four = format!("{url}&nconnect=4");
    let mut args = randrw.to_vec();
    args.extend(["--offset", "32m"]);
    let backend = verified(&lab, &dir, &four, "nconnect4", &args);
    assert!(backend.contains("nconnect 4"), "{backend}");

    // Versions storlab does not speak: one line naming the option and values.
    for bad in ["4.2", "5"] {
        let target = url.replace("version=4.1", &format!("version={bad}"));
        let o = lab
            .storlab()
            .args([
                "run",
                "--target",
                &target,
                "--rw",
                "randread",
                "--runtime",
                "1",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "version={bad} was accepted");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "invalid version=\"{bad}\" (allowed: 3, 4, 4.0, 4.1)"
            )),
            "{err}"
        );
    }
    lab.down_clean();
}
