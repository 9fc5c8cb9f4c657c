use crate::common::*;

#[test]
fn null_run_writes_consistent_json_and_excludes_ramp() {
    let dir = TempDir::new("null");
    let json = dir.join("out.json");
    let csv = dir.join("out.csv");
    let o = storlab(&[
        "run",
        "--target",
        "null:",
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--bs",
        "4k",
        "--iodepth",
        "16",
        "--numjobs",
        "2",
        "--ramp_time",
        "1",
        "--runtime",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&json);
    assert_eq!(doc["schema"], "storlab.run");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["complete"], true);
    assert!(doc["environment"]["kernel"].as_str().unwrap().len() > 1);
    let pts = points(&doc);
    assert_eq!(pts.len(), 1);
    let p = &pts[0];
    check_point(p, Some(4096));
    let iv = p["intervals"].as_array().unwrap();
    assert_eq!(
        iv.iter().filter(|i| i["phase"] == "ramp").count(),
        1,
        "one ramp interval"
    );
    assert_eq!(
        iv.iter().filter(|i| i["phase"] == "measure").count(),
        2,
        "two measured intervals"
    );
    // The ramp interval carried I/O, and the summary does not include it.
    let ramp_ios = u(&iv[0]["stats"]["read"]["ios"]) + u(&iv[0]["stats"]["write"]["ios"]);
    assert!(ramp_ios > 0);
    let total = u(&p["summary"]["total"]["ios"]);
    let all: u64 = iv
        .iter()
        .map(|i| u(&i["stats"]["read"]["ios"]) + u(&i["stats"]["write"]["ios"]))
        .sum();
    assert_eq!(total + ramp_ios, all);
    // The read share is the spec's.
    let reads = u(&p["summary"]["read"]["ios"]) as f64;
    assert!(
        (reads / total as f64 - 0.70).abs() < 0.01,
        "read share {}",
        reads / total as f64
    );
    assert_eq!(p["workers"].as_array().unwrap().len(), 2);
    // CSV: header plus one row per interval.
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + iv.len());
    assert!(text.starts_with("job,point,interval,phase"));
}

#[test]
fn summary_table_is_printed() {
    let o = storlab(&[
        "run",
        "--target",
        "null:",
        "--runtime",
        "1",
        "--iodepth",
        "4",
        "-q",
        "--histogram",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "IOPS",
        "p99 ms",
        "p99.99 ms",
        "host CPU%",
        "latency histogram",
        "24+",
    ] {
        assert!(out.contains(want), "summary lacks {want:?}:\n{out}");
    }
}

#[test]
fn rate_cap_holds_iops() {
    let dir = TempDir::new("rate");
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--target",
        "null:",
        "--rate_iops",
        "2000",
        "--iodepth",
        "8",
        "--runtime",
        "2",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p = &points(&read_json(&json))[0];
    let iops = p["summary"]["total"]["iops"].as_f64().unwrap();
    assert!(
        (iops - 2000.0).abs() < 100.0,
        "capped at 2000 IOPS, got {iops}"
    );
}

#[test]
fn repeat_runs_every_point_n_times_and_reports_a_confidence_interval() {
    let dir = TempDir::new("repeat");
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--target",
        "null:",
        "--vms",
        "2",
        "--iodepth",
        "4",
        "--runtime",
        "1",
        "--repeat",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pts = points(&read_json(&json));
    assert_eq!(pts.len(), 3);
    assert!(pts.iter().all(|p| p["label"] == pts[0]["label"]));
    for p in &pts {
        check_point(p, Some(4096));
    }
    let out = stdout(&o);
    assert!(
        out.contains("repeated load points: mean ± 95% confidence interval"),
        "{out}"
    );
    let o = storlab(&["run", "--target", "null:", "--repeat", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("repeat"), "{}", stderr(&o));
}
