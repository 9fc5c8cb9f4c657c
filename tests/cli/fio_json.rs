//! fio-compatible JSON out, checked against Debian's fio (installed by
//! setup.sh): the same job file run by fio with `--output-format=json+` and by
//! storlab with `--output-format fio-jsonplus`; fio's own
//! `fio_jsonplus_clat2csv` reads storlab's document.

use crate::common::*;
use serde_json::Value;
use std::process::Command;
use storlab::report::fiobins;
use storlab::report::fiojson::NOT_MEASURED;

const JOB: &str = "[global]\nioengine=null\nsize=64m\ntime_based\nruntime=1\n\n[mix]\nrw=randrw\nbs=4k\niodepth=4\n";

fn need(tool: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .unwrap();
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "{tool} is not installed: run ./setup.sh (it installs Debian's fio)"
    );
    path
}

/// storlab's fio-jsonplus document of `JOB`.
fn storlab_doc(dir: &TempDir, format: &str) -> Value {
    storlab_doc_of(dir, JOB, format)
}

/// storlab's document of `text` (a fio job file) in `format`.
fn storlab_doc_of(dir: &TempDir, text: &str, format: &str) -> Value {
    let job = dir.join("job.fio");
    std::fs::write(&job, text).unwrap();
    let o = storlab(&[
        "run",
        "--fio",
        job.to_str().unwrap(),
        "--no-db",
        "-q",
        "--output-format",
        format,
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key path of fio's document storlab's lacks or types differently.
/// Options objects echo what each tool was given; percentiles and bins are
/// keyed by data, checked for type only.
fn differences(fio: &Value, ours: &Value, path: &str, out: &mut Vec<String>) {
    let (Value::Object(f), Value::Object(o)) = (fio, ours) else {
        return;
    };
    for (k, fv) in f {
        let p = format!("{path}.{k}");
        if NOT_MEASURED.contains(&k.as_str()) || k == "disk_util" {
            continue;
        }
        match o.get(k) {
            None => out.push(format!("{p}: missing")),
            Some(ov) if kind(ov) != kind(fv) => {
                out.push(format!("{p}: fio {} storlab {}", kind(fv), kind(ov)))
            }
            Some(ov) if k == "percentile" || k == "bins" => {
                let types = |m: &Value| -> Vec<&str> {
                    let mut t: Vec<&str> = m.as_object().unwrap().values().map(kind).collect();
                    t.dedup();
                    t
                };
                if types(ov) != types(fv) {
                    out.push(format!("{p}: value types differ"));
                }
            }
            Some(_) if k.ends_with("options") => {}
            Some(Value::Array(oa)) => {
                if let (Some(fx), Some(ox)) = (fv.as_array().unwrap().first(), oa.first()) {
                    differences(fx, ox, &format!("{p}[0]"), out);
                }
            }
            Some(ov) => differences(fv, ov, &p, out),
        }
    }
}

/// Debian fio's document of `text` (a fio job file) in `format`.
fn fio_doc(dir: &TempDir, text: &str, format: &str) -> Value {
    let fio = need("fio");
    let job = dir.join("fio-job.fio");
    std::fs::write(&job, text).unwrap();
    let out = dir.join("fio.json");
    let o = Command::new(&fio)
        .args([
            &format!("--output-format={format}"),
            &format!("--output={}", out.display()),
            job.to_str().unwrap(),
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    read_json(&out)
}

#[test]
fn fio_jsonplus_has_fios_keys_and_types() {
    let dir = TempDir::new("fio-json");
    let theirs = fio_doc(&dir, JOB, "json+");
    let ours = storlab_doc(&dir, "fio-jsonplus");
    let mut diff = Vec::new();
    differences(&theirs, &ours, "", &mut diff);
    assert!(diff.is_empty(), "{diff:#?}");
    // Both wrote the job's reads and writes, with bins in fio's layout.
    let (tj, oj) = (&theirs["jobs"][0], &ours["jobs"][0]);
    assert_eq!(oj["jobname"], tj["jobname"]);
    for d in ["read", "write"] {
        assert!(u(&oj[d]["total_ios"]) > 0);
        let bins = |j: &Value| j[d]["clat_ns"]["bins"].as_object().unwrap().clone();
        for key in bins(tj).keys().chain(bins(oj).keys()) {
            let v: u64 = key.parse().unwrap();
            assert_eq!(
                fiobins::value(fiobins::index(v)),
                v,
                "{d} bin {key} is not a fio bin value"
            );
        }
        let n: u64 = bins(oj).values().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(n, u(&oj[d]["clat_ns"]["N"]));
        assert_eq!(u(&oj[d]["clat_ns"]["N"]), u(&oj[d]["total_ios"]));
    }
    // fio-json is the same document without the bins.
    let plain = storlab_doc(&dir, "fio-json");
    assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
    assert!(
        plain["jobs"][0]["read"]["clat_ns"]
            .get("percentile")
            .is_some()
    );
}

#[test]
fn fios_clat2csv_reads_storlabs_jsonplus() {
    let script = need("fio_jsonplus_clat2csv");
    let dir = TempDir::new("clat2csv");
    let doc = storlab_doc(&dir, "fio-jsonplus");
    let src = dir.join("storlab.json");
    std::fs::write(&src, serde_json::to_vec(&doc).unwrap()).unwrap();
    let dest = dir.join("lat.csv");
    let run = |extra: &[&str]| {
        let o = Command::new("python3")
            .arg(&script)
            .args([src.to_str().unwrap(), dest.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "clat2csv: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(run(&[]).contains("lat_job0.csv generated"));
    let csv = std::fs::read_to_string(dir.join("lat_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let job = &doc["jobs"][0];
    for d in ["read", "write"] {
        let (count, cum, pct) = (
            col(&format!("{d}_clat_ns_count")),
            col(&format!("{d}_clat_ns_cumulative")),
            col(&format!("{d}_clat_ns_percentile")),
        );
        let mut total = 0u64;
        let mut last = (0u64, 0.0f64);
        let mut prev_ns = 0u64;
        for row in csv.lines().skip(1) {
            let f: Vec<&str> = row.split(',').map(str::trim).collect();
            let ns: u64 = f[0].parse().unwrap();
            assert!(ns >= prev_ns, "rows in nsec order");
            prev_ns = ns;
            if !f[count].is_empty() {
                total += f[count].parse::<u64>().unwrap();
                last = (f[cum].parse().unwrap(), f[pct].parse().unwrap());
                assert_eq!(last.0, total);
            }
        }
        assert_eq!(total, u(&job[d]["total_ios"]), "{d}");
        assert_eq!(last, (total, 1.0), "{d}");
    }
    assert!(lines.count() > 10);
    // Its own check: the CSV's counts equal the document's bins.
    assert!(run(&["--validate"]).contains("lat_job0.csv validated"));
}

#[test]
fn a_steady_state_job_has_fios_steadystate_object() {
    let job = "[global]\nioengine=null\nsize=64m\ntime_based\nruntime=3\n\n\
               [steady]\nrw=randread\nbs=4k\nss=iops:90%\nss_dur=2\n";
    let dir = TempDir::new("fio-json-ss");
    let theirs = fio_doc(&dir, job, "json");
    let ours = storlab_doc_of(&dir, job, "fio-json");
    let mut diff = Vec::new();
    differences(&theirs, &ours, "", &mut diff);
    assert!(diff.is_empty(), "{diff:#?}");
    let (t, o) = (
        &theirs["jobs"][0]["steadystate"],
        &ours["jobs"][0]["steadystate"],
    );
    assert_eq!(o["ss"], t["ss"]);
    assert_eq!((u(&o["duration"]), u(&o["attained"])), (2, 1), "{o}");
    let iops: Vec<u64> = o["data"]["iops"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(iops.len(), 2, "{o}");
    assert!(iops.iter().all(|&v| v > 0), "{o}");
    let mean = u(&o["data"]["iops_mean"]);
    assert_eq!(mean, iops.iter().sum::<u64>() / 2);
    // Within the band it was judged on.
    let dev = o["max_deviation"].as_f64().unwrap();
    assert!(dev <= 0.9 * mean as f64 + 1.0, "{o}");
    let bw = u(&o["data"]["bw_mean"]);
    assert!(bw.abs_diff(4096 * mean) <= 4096, "4 KiB I/Os: {o}");
}
