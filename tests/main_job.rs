//! The README's main job, `storlab compare --lab --workload vsphere-shared-4k`
//! (quick profile), on its own temporary lab and the lab's default medium:
//! the block baseline in the FC role is 100, every protocol stands beside it
//! in the regime the reference studies measured (the medium, not loopback
//! CPU, decides: on the RAM medium the protocols come to 5-15% of the
//! baseline, on the array each within a few percent), and the lab is gone
//! afterwards. Needs root and ./setup.sh's packages.

mod support;

use serde_json::Value;
use support::{TempDir, storlab};

/// How far a protocol may stand from the baseline on the array medium and
/// still be "beside" it. The studies found about 10%; a loaded two-core CI
/// machine adds noise, and the RAM medium's 0.05-0.15 stays far outside.
const BESIDE: std::ops::RangeInclusive<f64> = 0.6..=1.4;

#[test]
fn the_main_job_puts_every_protocol_beside_the_fc_baseline_on_the_default_array() {
    support::assert_root("the lab needs root");
    let dir = TempDir::new("main-job", "compare");
    let (doc, stdout) = main_job(&dir, "run.json");
    if let Err(fell) = check(&doc, &stdout) {
        // A load point measured on a busy two-core machine can dip below
        // the one before it by noise (5,136 then 4,835 IOPS seen once in
        // CI): the job is run once more, and that run must hold.
        let (doc, stdout) = main_job(&dir, "rerun.json");
        check(&doc, &stdout).unwrap_or_else(|again| panic!("{again}\n(the first run: {fell})"));
    }
}

/// Runs the main job on a temporary lab; its JSON document and stdout.
fn main_job(dir: &TempDir, name: &str) -> (Value, String) {
    let json = dir.join(name);
    let mut cmd = storlab();
    cmd.args([
        "compare",
        "--lab",
        "--workload",
        "vsphere-shared-4k",
        "--profile",
        "quick",
        "--no-db",
        "-q",
        "--json",
    ])
    .arg(&json);
    let o = support::lab::run_with_temporary_lab(cmd, "compare");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (doc, stdout)
}

/// Every assertion on one run of the main job; `Err` only for a baseline
/// point more than 5% below the one before it.
fn check(doc: &Value, stdout: &str) -> Result<(), String> {
    assert!(
        stdout.contains("relative to FC 8Gb (block) = 100"),
        "{stdout}"
    );
    let compare = &doc["compare"];
    assert_eq!(compare["baseline"], "FC 8Gb (block)");
    assert_eq!(
        compare["lab"]["media"]["spec"], "array-15k",
        "the default medium"
    );
    let names: Vec<(String, String)> = serde_json::from_value(compare["targets"].clone()).unwrap();
    let want = ["FC 8Gb (block)", "nfs3", "nfs4", "iscsi", "nbd"];
    assert_eq!(names.iter().map(|n| n.0.as_str()).collect::<Vec<_>>(), want);

    // IOPS per (target name, load point).
    let mut iops = std::collections::BTreeMap::new();
    for job in doc["jobs"].as_array().unwrap() {
        for p in job["points"].as_array().unwrap() {
            let url = p["targets"][0].as_str().unwrap();
            let name = &names.iter().find(|n| n.1 == url).unwrap().0;
            let v = p["summary"]["total"]["iops"].as_f64().unwrap();
            assert!(v > 0.0, "{name} at {}: nothing measured", p["label"]);
            iops.insert((name.clone(), p["label"].as_str().unwrap().to_string()), v);
        }
    }
    let loads: Vec<String> = iops
        .keys()
        .filter(|(n, _)| n == want[0])
        .map(|(_, l)| l.clone())
        .collect();
    assert!(loads.len() >= 2, "load points: {loads:?}");
    assert!(
        stdout.contains("medium array-15k"),
        "every table names its medium\n{stdout}"
    );
    let fell = baseline_follows_the_model(doc, &names[0].1, stdout);
    for load in &loads {
        let base = iops[&(want[0].to_string(), load.clone())];
        for name in &want[1..] {
            let rel = iops[&(name.to_string(), load.clone())] / base;
            assert!(
                BESIDE.contains(&rel),
                "{name} at {load}: {rel:.2} of the baseline's IOPS, not beside it\n{stdout}"
            );
        }
    }
    fell
}

/// The FC baseline at each load point within 15% of what `storlab media
/// --predict` says the array does for that mix, outstanding I/O and region
/// touched, never more than 5% below the point before it, and every point
/// names what bound it.
fn baseline_follows_the_model(doc: &Value, url: &str, stdout: &str) -> Result<(), String> {
    let mut last: Option<f64> = None;
    for job in doc["jobs"].as_array().unwrap() {
        for p in job["points"].as_array().unwrap() {
            assert!(
                p["bound"]["by"].is_string(),
                "point {} names no bound: {}",
                p["label"],
                p["bound"]
            );
            if p["targets"][0] != url {
                continue;
            }
            let spec = &p["spec"];
            let g = &spec["groups"][0];
            let vms = g["vms"].as_u64().unwrap();
            let disks = g["disks_per_vm"].as_u64().unwrap();
            let oio = vms * g["access"]["iodepth"].as_u64().unwrap();
            let span = vms * disks * spec["size"].as_u64().unwrap();
            let o = storlab()
                .args(["media", "--predict", "array-15k", "--json", "--rwmixread"])
                .arg(g["access"]["read_pct"].to_string())
                .arg("--iodepth")
                .arg(oio.to_string())
                .arg("--size")
                .arg(span.to_string())
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", support::text(&o));
            let pred: Value = serde_json::from_slice(&o.stdout).unwrap();
            let model = pred[0]["iops"].as_f64().unwrap();
            let got = p["summary"]["total"]["iops"].as_f64().unwrap();
            assert!(
                (got / model - 1.0).abs() <= 0.15,
                "FC baseline at {}: {got:.0} IOPS, the model {model:.0} for {oio} OIO over {span} bytes\n{stdout}",
                p["label"]
            );
            if let Some(before) = last
                && got < 0.95 * before
            {
                return Err(format!(
                    "FC baseline fell from {before:.0} to {got:.0} IOPS at {}\n{stdout}",
                    p["label"]
                ));
            }
            last = Some(got);
        }
    }
    assert!(last.is_some(), "no point on the baseline {url}");
    Ok(())
}
