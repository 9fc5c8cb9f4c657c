use crate::common::*;

#[test]
fn unknown_workload_is_named() {
    rejects(
        &["run", "--workload", "vsphere-4k", "--target", "null:"],
        &["vsphere-4k", "vsphere-shared-4k"],
    );
}

#[test]
fn zero_block_size() {
    rejects(&["run", "--target", "null:", "--bs", "0"], &["bs", "0"]);
}

#[test]
fn read_percentage_out_of_range() {
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--rwmixread",
            "150",
            "--rw",
            "randrw",
        ],
        &["rwmixread", "150", "100"],
    );
}

#[test]
fn missing_directory() {
    rejects(
        &[
            "run",
            "--target",
            "file:/nonexistent-storlab/dir/x",
            "--runtime",
            "1",
        ],
        &["/nonexistent-storlab/dir"],
    );
}

#[test]
fn bad_target_scheme() {
    rejects(
        &["run", "--target", "nfs5://x/y"],
        &["nfs5://x/y", "file:PATH"],
    );
}

#[test]
fn no_target() {
    rejects(&["run", "--runtime", "1"], &["--target"]);
}

#[test]
fn foreign_file_is_never_written_without_permission() {
    let dir = TempDir::new("foreign");
    let f = dir.join("precious.db");
    let content: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&f, &content).unwrap();
    let target = format!("file:{}", f.display());
    rejects(
        &[
            "run",
            "--target",
            &target,
            "--rw",
            "randwrite",
            "--size",
            "1m",
            "--runtime",
            "1",
        ],
        &["precious.db", "--allow-overwrite"],
    );
    assert_eq!(std::fs::read(&f).unwrap(), content, "the file was modified");
    // Reading it is fine and leaves it intact.
    let o = storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "randread",
        "--size",
        "1m",
        "--runtime",
        "1",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&f).unwrap(),
        content,
        "a read-only run modified the file"
    );
    // With the explicit flag, storlab writes.
    let o = storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "randwrite",
        "--size",
        "1m",
        "--runtime",
        "1",
        "-q",
        "--allow-overwrite",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(std::fs::read(&f).unwrap(), content);
}

#[test]
fn bad_job_file_names_the_file() {
    let dir = TempDir::new("job");
    let f = dir.join("bad.toml");
    std::fs::write(&f, "bs = \"4k\"\nrwmixread = 150\nrw = \"randrw\"\n").unwrap();
    rejects(
        &["run", "--job", f.to_str().unwrap(), "--target", "null:"],
        &["bad.toml", "rwmixread", "150"],
    );
    rejects(
        &["run", "--job", "/nonexistent/job.toml", "--target", "null:"],
        &["/nonexistent/job.toml"],
    );
}

#[test]
fn writes_to_a_protocol_target_no_lab_made_are_refused() {
    // Refused before any connection is tried: nothing listens there.
    for url in [
        "nbd://127.0.0.1:1/export",
        "iscsi://127.0.0.1:1/iqn.2026-11.x:y/1",
        "nfs://127.0.0.1:1/e/f",
    ] {
        rejects(
            &[
                "run",
                "--target",
                url,
                "--rw",
                "randwrite",
                "--runtime",
                "1",
            ],
            &[url, "--allow-overwrite"],
        );
    }
    // A read-only run goes on to connect, and says what failed.
    let o = storlab(&[
        "run",
        "--target",
        "nbd://127.0.0.1:1/export",
        "--rw",
        "randread",
        "--runtime",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nbd://127.0.0.1:1/export"),
        "{}",
        stderr(&o)
    );
}

/// `--web`: an address in use, one that is not loopback without the fleet's
/// token, and one that is not IP:PORT are each one line naming it, before
/// anything runs (run, compare and study alike).
#[test]
fn a_bad_web_address_is_named() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    rejects(
        &["run", "--target", "null:", "--runtime", "1", "--web", &addr],
        &[&format!("--web {addr}"), "in use"],
    );
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--runtime",
            "1",
            "--web",
            "0.0.0.0:18080",
        ],
        &[
            "--web 0.0.0.0:18080",
            "not a loopback address",
            "--token-file",
        ],
    );
    rejects(
        &["compare", "--targets", "null:", "--web", "localhost"],
        &["--web \"localhost\"", "IP:PORT"],
    );
    rejects(
        &["study", "004", "--web", "10.1.2.3:80"],
        &["--web 10.1.2.3:80", "not a loopback address"],
    );
    // A bare port is loopback's: the same port, the same refusal.
    let port = busy.local_addr().unwrap().port().to_string();
    rejects(
        &["run", "--target", "null:", "--runtime", "1", "--web", &port],
        &[&format!("--web 127.0.0.1:{port}"), "in use"],
    );
    drop(busy);
}

#[test]
fn a_distribution_or_think_time_out_of_range_names_the_range() {
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--random_distribution",
            "zipf:0",
        ],
        &["--random_distribution", "zipf:0", "zipf's theta is > 0"],
    );
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--random_distribution",
            "pareto:1.5",
        ],
        &["pareto:1.5", "pareto's h is in (0, 1)"],
    );
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--random_distribution",
            "zoned:50/10:40/90",
        ],
        &["zoned:50/10:40/90", "access shares sum to 100"],
    );
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--size",
            "1m",
            "--random_distribution",
            "zoned_abs:50/1m:50/1m",
        ],
        &["random_distribution", "fit in the region"],
    );
    rejects(
        &[
            "run",
            "--target",
            "null:",
            "--thinktime",
            "1ms",
            "--thinktime_spin",
            "2ms",
        ],
        &["thinktime_spin", "0 ..= thinktime"],
    );
    rejects(
        &["run", "--target", "null:", "--thinktime", "2m"],
        &["thinktime = 2 min", "0 ..= 1 min"],
    );
}

#[test]
fn a_reconnect_timeout_past_the_io_timeout_names_both() {
    rejects(
        &["run", "--target", "null:", "--reconnect-timeout", "40s"],
        &[
            "reconnect_timeout",
            "40 s",
            "shorter than io_timeout (30 s)",
        ],
    );
    rejects(
        &["run", "--target", "null:", "--reconnect-timeout", "soon"],
        &["reconnect_timeout", "soon"],
    );
}
