//! Foreign job files in: `storlab run --fio`, `storlab convert`, and the
//! converted TOML run back through `storlab run --job`.

use crate::common::*;
use std::path::Path;

fn example(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// The specs of every point of a run document.
fn specs(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    points(doc).iter().map(|p| p["spec"].clone()).collect()
}

#[test]
fn fio_file_runs_on_its_own_target_and_converts_to_the_same_job() {
    let dir = TempDir::new("fio");
    let fio = example("examples/fio/null-mixed.fio");
    // Its target (ioengine=null) is taken from the file: no --target.
    let a = dir.join("fio.json");
    let o = storlab(&[
        "run",
        "--fio",
        &fio,
        "--runtime",
        "1",
        "--json",
        a.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&a);
    let p = &points(&doc)[0];
    assert_eq!(p["targets"], serde_json::json!(["null:"]));
    assert!(u(&p["measured"]["read"]["ios"]) > 0 && u(&p["measured"]["write"]["ios"]) > 0);
    assert_eq!(p["spec"]["groups"].as_array().unwrap().len(), 2);

    // convert, then run the TOML: the same spec.
    let o = storlab(&["convert", &fio]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let toml = dir.join("converted.toml");
    std::fs::write(&toml, stdout(&o)).unwrap();
    let b = dir.join("toml.json");
    let o = storlab(&[
        "run",
        "--job",
        toml.to_str().unwrap(),
        "--target",
        "null:",
        "--runtime",
        "1",
        "--json",
        b.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(specs(&read_json(&b)), specs(&doc));
}

#[test]
fn fio_file_on_a_file_target_with_stonewalls() {
    let dir = TempDir::new("fio-file");
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--fio",
        &example("examples/fio/stonewalls.fio"),
        "--target",
        &dir.target(),
        "--runtime",
        "1",
        "--ramp_time",
        "0",
        "--size",
        "4m",
        "--direct",
        "0",
        "--json",
        json.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let labels: Vec<String> = points(&read_json(&json))
        .iter()
        .map(|p| p["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels, ["seq-write", "seq-read", "oltp + logger"]);
}

#[test]
fn unsupported_fio_options_are_refused_one_line_each_and_nothing_runs() {
    let dir = TempDir::new("fio-bad");
    let f = dir.join("bad.fio");
    std::fs::write(
        &f,
        "[global]\nioengine=null\nsize=1m\n[a]\nverify=md5\nrw=trim\nverfy=md5\n",
    )
    .unwrap();
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--fio",
        f.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--no-db",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    let file = f.display().to_string();
    assert_eq!(lines.len(), 3, "{err}");
    // A fio option storlab does not run says so; a name fio lacks is unknown.
    assert!(
        lines[0].starts_with(&format!(
            "storlab: error: {file}, line 5: fio option \"verify\" is not supported by storlab ("
        )),
        "{err}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "storlab: error: {file}, line 6: invalid rw = trim"
        )),
        "{err}"
    );
    assert!(
        lines[2].starts_with(&format!(
            "storlab: error: {file}, line 7: unknown fio option \"verfy\" (allowed: name,"
        )),
        "{err}"
    );
    assert!(!json.exists());
    let o = storlab(&["convert", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
}

#[test]
fn iometer_configuration_runs_each_access_specification_and_converts() {
    let dir = TempDir::new("icf");
    let icf = example("examples/iometer/study-004.icf");
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--icf",
        &icf,
        "--target",
        "null:",
        "--runtime",
        "0.1",
        "--ramp_time",
        "0",
        "--size",
        "4m",
        "--json",
        json.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&json);
    let pts = points(&doc);
    assert_eq!(pts.len(), 17);
    assert_eq!(pts[0]["label"], "ntfs-1");
    assert_eq!(pts[16]["label"], "restore");
    // restore is all writes, ntfs-1 all reads.
    assert_eq!(u(&pts[16]["measured"]["read"]["ios"]), 0);
    assert!(u(&pts[16]["measured"]["write"]["ios"]) > 0);
    assert_eq!(u(&pts[0]["measured"]["write"]["ios"]), 0);

    let o = storlab(&["convert", &icf]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let toml = dir.join("study-004.toml");
    std::fs::write(&toml, stdout(&o)).unwrap();
    let json2 = dir.join("toml.json");
    let o = storlab(&[
        "run",
        "--job",
        toml.to_str().unwrap(),
        "--target",
        "null:",
        "--runtime",
        "0.1",
        "--ramp_time",
        "0",
        "--size",
        "4m",
        "--json",
        json2.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(specs(&read_json(&json2)), specs(&doc));
}

#[test]
fn a_skewed_bursty_fio_file_runs_paced_by_its_think_time() {
    let dir = TempDir::new("fio-skew");
    let json = dir.join("out.json");
    let o = storlab(&[
        "run",
        "--fio",
        &example("examples/fio/skewed-bursty.fio"),
        "--target",
        &dir.target(),
        "--runtime",
        "2",
        "--size",
        "8m",
        "--direct",
        "0",
        "--json",
        json.to_str().unwrap(),
        "-q",
        "--no-db",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&json);
    let p = &points(&doc)[0];
    let a = &p["spec"]["groups"][0]["access"];
    assert_eq!(a["distribution"], "zipf:1.1");
    assert_eq!(a["think"]["blocks"], 4);
    assert_eq!(a["think"]["time"], 0.001);
    // Bursts of 4 and a 1 ms pause after each: at most 4 I/Os a millisecond.
    let ios = u(&p["measured"]["read"]["ios"]) + u(&p["measured"]["write"]["ios"]);
    assert!(ios > 400 && ios <= 8 * 1000 + 8, "{ios} I/Os in 2 s");
    // And convert writes the same keys back.
    let o = storlab(&["convert", &example("examples/fio/skewed-bursty.fio")]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let toml = stdout(&o);
    assert!(
        toml.contains("random_distribution = \"zipf:1.1\""),
        "{toml}"
    );
    assert!(toml.contains("thinktime"), "{toml}");
}
