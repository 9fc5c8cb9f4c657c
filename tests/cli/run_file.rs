use crate::common::*;

#[test]
fn file_run_prepares_files_once_and_counts_bytes() {
    let dir = TempDir::new("file");
    let json = dir.join("out.json");
    let data = TempDir::new("filedata");
    let args = |json: &str| {
        vec![
            "run".to_string(),
            "--target".into(),
            data.target(),
            "--vms".into(),
            "2".into(),
            "--disks".into(),
            "2".into(),
            "--size".into(),
            "4m".into(),
            "--rw".into(),
            "randrw".into(),
            "--rwmixread".into(),
            "75".into(),
            "--bs".into(),
            "8k".into(),
            "--iodepth".into(),
            "4".into(),
            "--runtime".into(),
            "1".into(),
            "--json".into(),
            json.to_string(),
            "-q".into(),
        ]
    };
    let a = args(json.to_str().unwrap());
    let o = bin().args(&a).output().unwrap();
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p = &points(&read_json(&json))[0];
    check_point(p, Some(8192));
    assert!(u(&p["summary"]["write"]["ios"]) > 0 && u(&p["summary"]["read"]["ios"]) > 0);
    // One file per VM disk, each 4 MiB, each with storlab's marker.
    for vm in 0..2 {
        for d in 0..2 {
            let f = data.join(&format!("storlab-vm{vm:03}-d{d}.dat"));
            assert_eq!(
                std::fs::metadata(&f).unwrap().len(),
                4 << 20,
                "{}",
                f.display()
            );
            assert!(
                data.join(&format!(".storlab-vm{vm:03}-d{d}.dat.storlab"))
                    .exists()
            );
        }
    }
    let prepared = p["prepared"].as_array().unwrap();
    assert_eq!(prepared.len(), 4);
    assert!(
        prepared
            .iter()
            .all(|f| f["created"] == true && u(&f["filled_bytes"]) == 4 << 20)
    );
    // A second run reuses the prepared files without filling them again.
    let json2 = dir.join("out2.json");
    let o = bin().args(args(json2.to_str().unwrap())).output().unwrap();
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p = &points(&read_json(&json2))[0];
    assert!(
        p["prepared"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["created"] == false && u(&f["filled_bytes"]) == 0)
    );
}

#[test]
fn direct_sequential_read_on_a_file() {
    let data = TempDir::new("direct");
    let json = data.join("out.json");
    let target = format!("file:{}", data.join("one.dat").display());
    let o = storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "read",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--size",
        "8m",
        "--direct",
        "1",
        "--runtime",
        "1",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    let err = stderr(&o);
    if !o.status.success() {
        // Some file systems (tmpfs before 6.6) refuse O_DIRECT: that must be said clearly.
        assert!(
            err.contains("O_DIRECT") || err.contains("direct"),
            "unclear error: {err}"
        );
        eprintln!(
            "note: O_DIRECT not supported on {}: {err}",
            data.path().display()
        );
        return;
    }
    let p = &points(&read_json(&json))[0];
    check_point(p, Some(65536));
    assert!(u(&p["summary"]["read"]["ios"]) > 0);
    assert_eq!(u(&p["summary"]["write"]["ios"]), 0);
}

#[test]
fn vsphere_shared_4k_quick_runs_all_four_load_points() {
    let data = TempDir::new("vsphere");
    let json = data.join("out.json");
    let o = storlab(&[
        "run",
        "--workload",
        "vsphere-shared-4k",
        "--profile",
        "quick",
        "--target",
        &data.target(),
        "--ramp_time",
        "0",
        "--runtime",
        "1",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&json);
    let pts = points(&doc);
    let vms: Vec<u64> = pts
        .iter()
        .map(|p| u(&p["spec"]["groups"][0]["vms"]))
        .collect();
    assert_eq!(vms, [32, 64, 96, 128]);
    for p in &pts {
        check_point(p, Some(4096));
        let total = u(&p["summary"]["total"]["ios"]) as f64;
        let reads = u(&p["summary"]["read"]["ios"]) as f64;
        assert!(total > 0.0);
        assert!(
            (reads / total - 0.75).abs() < 0.03,
            "75% reads, got {}",
            reads / total
        );
        assert_eq!(
            p["workers"].as_array().unwrap().len() as u64,
            u(&p["spec"]["groups"][0]["vms"])
        );
    }
    let out = stdout(&o);
    for label in ["32", "64", "96", "128"] {
        assert!(
            out.lines().any(|l| l.contains(label)),
            "summary lacks load point {label}:\n{out}"
        );
    }
}

#[test]
fn io_error_mid_run_names_the_file_and_keeps_what_was_measured() {
    let data = TempDir::new("ioerr");
    let json = data.join("out.json");
    let file = data.join("shrinks.dat");
    let target = format!("file:{}", file.display());
    let child = bin()
        .args([
            "run",
            "--target",
            &target,
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--iodepth",
            "4",
            "--size",
            "8m",
            "--runtime",
            "30",
            "--json",
            json.to_str().unwrap(),
            "-q",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it prepare the file and measure at least one interval, then cut the file short.
    let start = std::time::Instant::now();
    while !file.exists() || std::fs::metadata(&file).unwrap().len() < 8 << 20 {
        assert!(start.elapsed().as_secs() < 20, "file never prepared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1800));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains("shrinks.dat") && err.contains("short read"),
        "error must name file and cause: {err}"
    );
    let doc = read_json(&json);
    assert_eq!(doc["complete"], true);
    assert!(doc["error"].as_str().unwrap().contains("shrinks.dat"));
    let p = &points(&doc)[0];
    assert!(!p["intervals"].as_array().unwrap().is_empty());
    assert!(
        u(&p["summary"]["read"]["ios"]) > 0,
        "reads before the failure are kept"
    );
    assert!(u(&p["summary"]["read"]["errors"]) >= 1);
}

/// `--io_size` without `--runtime` has no time bound: each worker moves exactly
/// its bytes and the point ends (it used to plan zero intervals and do nothing).
#[test]
fn io_size_without_runtime_runs_until_the_bytes_are_done() {
    let dir = TempDir::new("iosize");
    let json = dir.join("out.json");
    let data = TempDir::new("iosizedata");
    let o = storlab(&[
        "run",
        "--target",
        &data.target(),
        "--vms",
        "2",
        "--size",
        "4m",
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--iodepth",
        "4",
        "--io_size",
        "2m",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p = &points(&read_json(&json))[0];
    // 2 VMs x 2 MiB each, in 4 KiB writes.
    assert_eq!(u(&p["summary"]["write"]["bytes"]), 2 * (2 << 20));
    assert_eq!(u(&p["summary"]["write"]["ios"]), 2 * 512);
}

/// A `--verify` pass of 256 16 KiB I/Os at iodepth 8 (`rw` over 4 MiB of
/// `target`, with `extra` flags): the run's output and its JSON's path.
fn verified_pass(
    data: &TempDir,
    target: &str,
    rw: &str,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let json = data.join(&format!("{rw}.json"));
    let mut args = vec![
        "run",
        "--target",
        target,
        "--rw",
        rw,
        "--bs",
        "16k",
        "--iodepth",
        "8",
        "--size",
        "4m",
        "--io_size",
        "4m",
        "--runtime",
        "60",
        "--verify",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    let o = bin()
        .env("STORLAB_VERIFY_DIR", data.join("state"))
        .args(&args)
        .output()
        .unwrap();
    (o, json)
}

/// `--sqpoll` on a file: a verified write pass then a verified read pass
/// through the SQPOLL ring find every block as written, and the backend
/// line says sqpoll; `--hipri` polls or refuses in one line naming it and
/// the file; the null target refuses both.
#[test]
fn sqpoll_reads_back_verified_data_and_hipri_is_named_where_refused() {
    let data = TempDir::new("sqpoll");
    let file = data.join("one.dat");
    let target = format!("file:{}", file.display());
    let pass = |rw: &str, extra: &[&str]| verified_pass(&data, &target, rw, extra);
    for rw in ["write", "read"] {
        let (o, json) = pass(rw, &["--sqpoll"]);
        assert!(o.status.success(), "{rw}: {}", stderr(&o));
        let p = &points(&read_json(&json))[0];
        let backend = p["backend"].as_str().unwrap();
        assert!(
            backend.contains("sqpoll") && backend.contains("registered files"),
            "{backend}"
        );
        assert_eq!(p["spec"]["sqpoll"], true, "{}", p["spec"]);
        assert_eq!(u(&p["summary"][rw]["ios"]), 256, "{rw}");
        assert_eq!(u(&p["summary"]["total"]["errors"]), 0, "{rw}");
    }
    // A verified read finds a block that differs: the check is live.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.write_all_at(&[0x5a; 64], 100 * 16384 + 512).unwrap();
    }
    let (o, _) = pass("read", &["--sqpoll"]);
    assert!(!o.status.success(), "the corrupted block went unseen");
    assert!(
        stderr(&o).contains(&format!("at offset {}", 100 * 16384 + 512)),
        "{}",
        stderr(&o)
    );

    let (o, json) = pass("read", &["--hipri", "--direct", "1"]);
    let err = stderr(&o);
    if o.status.success() {
        let p = &points(&read_json(&json))[0];
        assert!(p["backend"].as_str().unwrap().contains("iopoll"));
    } else if !err.contains("cannot open for O_DIRECT") {
        let line = format!(
            "storlab: error: {}: hipri (IORING_SETUP_IOPOLL) refused: ",
            file.display()
        );
        assert!(err.starts_with(&line), "{err}");
        assert!(err.contains("turn hipri off (--hipri 0)"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }

    for option in ["--sqpoll", "--hipri"] {
        let o = storlab(&[
            "run",
            "--target",
            "null:",
            "--size",
            "1m",
            "--direct",
            "1",
            "--runtime",
            "1",
            option,
            "-q",
        ]);
        assert!(!o.status.success());
        let want = format!(
            "storlab: error: {}: the null: target's backend does not use io_uring",
            &option[2..]
        );
        assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    }
}

/// `--ioengine psync` on a file: a verified write pass then a verified read
/// pass find every block as written, every I/O counted; the record names the
/// engine, and an iodepth above 1 runs at 1 with a note, as fio's psync does.
/// Elsewhere (the null target, with io_uring's polling, an unknown engine)
/// it is refused in one line naming the option and what is allowed.
#[test]
fn psync_runs_a_file_at_depth_one_and_is_refused_elsewhere() {
    let data = TempDir::new("psync");
    let target = format!("file:{}", data.join("one.dat").display());
    for rw in ["write", "read"] {
        let (o, json) = verified_pass(&data, &target, rw, &["--ioengine", "psync"]);
        assert!(o.status.success(), "{rw}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(
                "ioengine psync keeps one I/O in flight per worker whatever \
                 iodepth says, so iodepth = 1 (not 8)"
            ),
            "{}",
            stderr(&o)
        );
        let p = &points(&read_json(&json))[0];
        let backend = p["backend"].as_str().unwrap();
        assert!(backend.starts_with("file: psync"), "{backend}");
        assert_eq!(p["spec"]["ioengine"], "psync", "{}", p["spec"]);
        assert_eq!(u(&p["spec"]["groups"][0]["access"]["iodepth"]), 1);
        assert_eq!(u(&p["summary"][rw]["ios"]), 256, "{rw}");
        assert_eq!(u(&p["summary"]["total"]["errors"]), 0, "{rw}");
    }
    let refused = |extra: &[&str]| {
        let mut args = vec!["run", "--size", "1m", "--runtime", "1", "-q"];
        args.extend_from_slice(extra);
        let o = storlab(&args);
        assert!(!o.status.success(), "{extra:?}");
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        err
    };
    let e = refused(&["--target", "null:", "--ioengine", "psync"]);
    assert!(
        e.starts_with(
            "storlab: error: ioengine: psync runs on file: targets only (files and block \
             devices), not on the null: target: use --ioengine io_uring (allowed: io_uring, psync)"
        ),
        "{e}"
    );
    let e = refused(&["--target", &target, "--ioengine", "psync", "--sqpoll"]);
    assert!(
        e.starts_with(
            "storlab: error: invalid ioengine = psync (allowed: io_uring with sqpoll or hipri"
        ),
        "{e}"
    );
    let e = refused(&["--target", &target, "--ioengine", "libaio"]);
    assert!(
        e.starts_with("storlab: error: invalid --ioengine = libaio (allowed: io_uring, psync)"),
        "{e}"
    );
}
