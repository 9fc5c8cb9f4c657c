//! User catalogue files: `--catalogue FILE` on `workloads`, `run` and
//! `compare`, the catalogue directory, and refusals that name the files.

use crate::common::*;
use std::path::Path;

/// A one-second user workload, from a built-in one, and a suite.
const MINE: &str = r#"
[[workload]]
name = "mine-null"
from = "db-8k-read"
study = "in-house"
summary = "the database reads, briefly"
label = "brief"
size = "1MiB"
ramp_time = 0
runtime = { full = "5s", quick = "1s" }
[workload.source]
runtime = "in-house: long enough"

[[suite]]
name = "mine-suite"
summary = "mine twice"
workloads = ["mine-null", "mine-null"]
"#;

fn write(dir: &TempDir, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// storlab with the catalogue directory set to `dir` ("" for none).
fn storlab_in(dir: &str, args: &[&str]) -> std::process::Output {
    bin()
        .env("STORLAB_CATALOGUE_DIR", dir)
        .args(args)
        .output()
        .expect("run storlab")
}

#[test]
fn workloads_lists_and_shows_a_catalogue_file() {
    let dir = TempDir::new("catalogue-list");
    let file = write(&dir, "mine.toml", MINE);
    let o = storlab_in("", &["workloads", "--catalogue", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("\nWorkloads from {file}:\n  mine-null ")),
        "{out}"
    );
    assert!(out.contains("vsphere-shared-4k"), "{out}");
    assert!(
        out.contains(&format!("\nSuites from {file}:\n  mine-suite ")),
        "{out}"
    );

    let o = storlab_in(
        "",
        &[
            "workloads",
            "show",
            "mine-null",
            "--profile",
            "quick",
            "--catalogue",
            &file,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!(
            "mine-null (study in-house, quick profile, from {file}): the database reads, briefly"
        )),
        "{out}"
    );
    assert!(
        out.contains("storlab quick profile (full: 0 s ramp, 5 s measured; in-house: long enough)"),
        "{out}"
    );
    assert!(out.contains("study 001: 2 disks"), "{out}");
}

#[test]
fn the_catalogue_directory_is_read_in_name_order() {
    let dir = TempDir::new("catalogue-dir");
    write(&dir, "a.toml", MINE);
    write(
        &dir,
        "b.toml",
        "[[workload]]\nname = \"b-null\"\nfrom = \"mine-null\"\nsummary = \"from a.toml\"\n",
    );
    write(&dir, "notes.txt", "not a catalogue");
    let d = dir.path().display().to_string();
    let o = storlab_in(&d, &["workloads"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let (a, b) = (out.find("mine-null").unwrap(), out.find("b-null").unwrap());
    assert!(a < b, "{out}");

    let o = storlab_in("/nonexistent/catalogue.d", &["workloads"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid STORLAB_CATALOGUE_DIR = /nonexistent/catalogue.d ("),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_name_defined_twice_is_refused_naming_both() {
    let dir = TempDir::new("catalogue-twice");
    let file = write(
        &dir,
        "dup.toml",
        "\n[[workload]]\nname = \"db-8k-read\"\nstudy = \"x\"\nsummary = \"y\"\n",
    );
    let o = storlab_in("", &["workloads", "--catalogue", &file]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "storlab: error: catalogue file {file}, line 2, workload \"db-8k-read\": invalid name = db-8k-read \
             (allowed: a name no other workload or suite has (db-8k-read is already defined in the built-in catalogue))\n"
        )
    );
    let mine = write(&dir, "mine.toml", MINE);
    let again = write(&dir, "again.toml", MINE);
    let o = storlab_in(
        "",
        &[
            "run",
            "-w",
            "mine-null",
            "--catalogue",
            &mine,
            "--catalogue",
            &again,
            "-t",
            "null:",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "catalogue file {again}, line 2, workload \"mine-null\""
        )) && err.contains(&format!("already defined in the catalogue file {mine}")),
        "{err}"
    );
    // The same file twice is one file.
    let o = storlab_in(
        "",
        &["workloads", "--catalogue", &mine, "--catalogue", &mine],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn run_and_compare_take_a_catalogue_workload() {
    let dir = TempDir::new("catalogue-run");
    let file = write(&dir, "mine.toml", MINE);
    let json = dir.join("run.json");
    let o = storlab_in(
        "",
        &[
            "run",
            "-w",
            "mine-suite",
            "--catalogue",
            &file,
            "-t",
            "null:",
            "--no-db",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = read_json(&json);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["name"], "mine-null");
    let p = &points(&doc)[0];
    assert_eq!(p["spec"]["label"], "brief", "{p}");
    assert_eq!(p["spec"]["runtime"], 1.0, "{p}");
    check_point(p, Some(8192));

    let json = dir.join("compare.json");
    let o = storlab_in(
        "",
        &[
            "compare",
            "-w",
            "mine-null",
            "--catalogue",
            &file,
            "--targets",
            "a=null:,b=null:",
            "--no-db",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(Path::new(&json).exists());

    // A catalogue without a workload to take from it is refused.
    let o = storlab_in("", &["run", "--catalogue", &file, "-t", "null:", "--no-db"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--workload"), "{}", stderr(&o));
}
