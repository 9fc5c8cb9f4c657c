//! `storlab run --replay`: a trace replayed end to end on file targets, and
//! the one line a bad trace gets.

use crate::common::*;
use std::fmt::Write as _;
use std::path::Path;

/// A fio v3 iolog of `n` I/Os 200 µs apart, every third a write, with a trim
/// between; its reads, writes and bytes.
fn iolog(path: &Path, n: u64) -> (u64, u64, u64) {
    let mut t = String::from("fio version 3 iolog\n0 /dev/vdb add\n0 /dev/vdb open\n");
    let (mut reads, mut writes, mut bytes) = (0, 0, 0);
    for i in 0..n {
        let len = 4096 << (i % 3);
        let action = if i % 3 == 0 { "write" } else { "read" };
        if i % 3 == 0 {
            writes += 1
        } else {
            reads += 1
        }
        bytes += len;
        writeln!(
            t,
            "{} /dev/vdb {action} {} {len}",
            500 + i * 200,
            (i * 7919 % 1000) * 4096
        )
        .unwrap();
        if i == 5 {
            writeln!(t, "{} /dev/vdb trim 0 4096", 500 + i * 200).unwrap();
        }
    }
    writeln!(t, "{} /dev/vdb close", 500 + n * 200).unwrap();
    std::fs::write(path, t).unwrap();
    (reads, writes, bytes)
}

#[test]
fn an_iolog_replays_on_a_file_with_its_reads_writes_and_issue_lag() {
    let dir = TempDir::new("replay");
    let trace = dir.join("trace.log");
    let (reads, writes, bytes) = iolog(&trace, 500);
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--replay",
        trace.to_str().unwrap(),
        "--target",
        &format!("file:{}", dir.join("disk.dat").display()),
        "--json",
        json.to_str().unwrap(),
    ]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "stderr: {err}");
    assert!(
        err.contains("1 trims and 0 syncs or flushes of the trace are not replayed"),
        "{err}"
    );
    assert!(
        out.contains("issued behind the trace's times by p50"),
        "{out}"
    );
    assert!(out.contains("trace replayed open loop"), "{out}");
    let p = &points(&read_json(&json))[0];
    let s = &p["summary"];
    assert_eq!(u(&s["read"]["ios"]), reads);
    assert_eq!(u(&s["write"]["ios"]), writes);
    assert_eq!(u(&s["total"]["bytes"]), bytes);
    assert_eq!(u(&s["issue_lag"]["ios"]), reads + writes);
    for k in ["p50_us", "p99_us", "max_us"] {
        assert!(
            s["issue_lag"][k].as_f64().unwrap() >= 0.0,
            "{k}: {}",
            s["issue_lag"]
        );
    }
    let r = &p["spec"]["replay"];
    assert_eq!(r["format"], "fio_v3");
    assert_eq!(r["shape"]["devices"][0], "/dev/vdb");
    // The trace's 100 ms ran in one sub-second point, not the default 10 s.
    assert!(s["seconds"].as_f64().unwrap() < 5.0, "{}", s["seconds"]);
}

#[test]
fn a_blkparse_trace_maps_its_devices_to_the_targets_in_order() {
    let dir = TempDir::new("replay-blk");
    let trace = dir.join("blk.txt");
    std::fs::write(
        &trace,
        "  8,0    1        1     0.000000000  4162  Q  WS 2048 + 8 [kjournald]\n\
         \x20 8,0    1        2     0.000002000  4162  D  WS 2048 + 8 [kjournald]\n\
         \x20 8,16   0        3     0.001000000  4163  Q   R 40960 + 16 [cat]\n\
         \x20 8,16   0        4     0.002000000  4163  Q   R 40976 + 16 [cat]\n\
         \x20 8,0    1        5     0.003000000  4162  Q  FWS [kjournald]\n\
         CPU0 (8,0):\n Reads Queued:           2,        16KiB\n",
    )
    .unwrap();
    let json = dir.join("out.json");
    let (a, b) = (dir.join("a.dat"), dir.join("b.dat"));
    let o = storlab(&[
        "run",
        "--replay",
        trace.to_str().unwrap(),
        "--target",
        &format!("file:{}", a.display()),
        "--target",
        &format!("file:{}", b.display()),
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p = &points(&read_json(&json))[0];
    assert_eq!(u(&p["summary"]["write"]["ios"]), 1);
    assert_eq!(u(&p["summary"]["read"]["ios"]), 2);
    assert_eq!(u(&p["summary"]["total"]["bytes"]), 4096 + 2 * 8192);
    assert_eq!(
        p["spec"]["replay"]["shape"]["devices"],
        serde_json::json!(["8,0", "8,16"])
    );
    // Device 8,16's furthest sector is past 20 MiB: both files hold it.
    for f in [&a, &b] {
        assert!(
            std::fs::metadata(f).unwrap().len() >= (40976 + 16) * 512,
            "{}",
            f.display()
        );
    }
}

#[test]
fn a_bad_trace_line_is_named_by_file_line_and_fault() {
    let dir = TempDir::new("replay-bad");
    let trace = dir.join("trace.log");
    std::fs::write(
        &trace,
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb read x12 4096\n",
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    rejects(
        &["run", "--replay", t, "--target", "null:"],
        &[&format!("{t}:5: offset \"x12\" is not a number")],
    );
    let missing = dir.join("nonexistent.log");
    let m = missing.to_str().unwrap();
    rejects(
        &["run", "--replay", m, "--target", "null:"],
        &[&format!("{m}: cannot open the trace")],
    );
    let csv = dir.join("trace.csv");
    std::fs::write(&csv, "ts,lba,len\n").unwrap();
    rejects(
        &[
            "run",
            "--replay",
            csv.to_str().unwrap(),
            "--target",
            "null:",
        ],
        &[
            ":1: first line",
            "fio iolog version 2",
            "fio iolog version 3",
            "blkparse",
        ],
    );
    let good = dir.join("good.log");
    iolog(&good, 3);
    let g = good.to_str().unwrap();
    rejects(
        &["run", "--replay", g, "--target", "null:", "--bs", "8k"],
        &["--bs does not go with --replay"],
    );
    rejects(
        &[
            "run",
            "--replay",
            g,
            "--target",
            "null:",
            "--replay-speed",
            "0",
        ],
        &["invalid --replay-speed = 0"],
    );
    rejects(
        &[
            "run",
            "--replay",
            g,
            "--target",
            "null:",
            "--hosts",
            "127.0.0.1:1",
            "--token-file",
            g,
        ],
        &["--replay runs in this process only, not with --hosts"],
    );
}
