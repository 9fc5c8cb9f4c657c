//! The built-in catalogue, pinned: every workload in both profiles resolves to
//! exactly the job (points, values and provenance, in order) recorded in
//! tests/fixtures/catalogue/, every suite to its workloads' jobs in order, and
//! `storlab workloads` / `workloads show` print exactly the recorded text.
//!
//! `STORLAB_BLESS=1 cargo test --test catalogue` rewrites the fixtures (review
//! the diff before committing: a change there changes what users run).

use std::path::{Path, PathBuf};
use storlab::workload::{Profile, catalogue};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalogue")
}

fn blessing() -> bool {
    std::env::var_os("STORLAB_BLESS").is_some_and(|v| v == "1")
}

/// Compare `actual` with the committed file, or rewrite it when blessing; a
/// difference is reported by its first differing line.
fn snapshot(name: &str, actual: &str) {
    let path = fixtures().join(name);
    if blessing() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run STORLAB_BLESS=1 cargo test --test catalogue)",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let at = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    let new = path.with_extension("actual");
    std::fs::write(&new, actual).unwrap();
    panic!(
        "{} differs from the output at line {}: expected {:?}, got {:?} (whole output in {})",
        path.display(),
        at + 1,
        expected.lines().nth(at).unwrap_or("(end)"),
        actual.lines().nth(at).unwrap_or("(end)"),
        new.display()
    );
}

fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Quick => "quick",
        Profile::Full => "full",
    }
}

/// A job as diffable text: a `job` line with its own fields, then one line per
/// provenance record and per load point, each compact JSON.
fn job_text(job: &storlab::workload::Job) -> String {
    let serde_json::Value::Object(mut fields) = serde_json::to_value(job).unwrap() else {
        panic!("a job serializes as an object");
    };
    let mut lines = Vec::new();
    let mut take = |key: &str, tag: &str| {
        if let Some(serde_json::Value::Array(items)) = fields.remove(key) {
            for item in items {
                lines.push(format!("  {tag} {item}"));
            }
        }
    };
    take("provenance", "source");
    take("points", "point");
    let head = format!("  job {}", serde_json::Value::Object(fields));
    format!("{head}\n{}\n", lines.join("\n"))
}

#[test]
fn every_workload_resolves_to_the_recorded_jobs() {
    for profile in [Profile::Quick, Profile::Full] {
        let mut text = String::new();
        for e in catalogue::entries() {
            let name = e.name.to_string();
            let jobs = catalogue::resolve(&name, profile).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(jobs.len(), 1, "{name}");
            text.push_str(&format!("{name}\n{}", job_text(&jobs[0])));
        }
        snapshot(&format!("jobs-{}.txt", profile_name(profile)), &text);
    }
}

/// A suite is its workloads in order: the same jobs and the same `show` text
/// under a header line, which the listing snapshot pins with the names.
#[test]
fn every_suite_is_its_workloads_in_order() {
    for profile in [Profile::Quick, Profile::Full] {
        let mut headers = String::new();
        for s in catalogue::suites() {
            let name = s.name.to_string();
            let workloads: Vec<String> = s.workloads.iter().map(|w| w.to_string()).collect();
            let mut jobs = Vec::new();
            let mut shown = String::new();
            for w in &workloads {
                jobs.extend(catalogue::resolve(w, profile).unwrap());
                shown.push('\n');
                shown.push_str(&catalogue::show_text(w, profile).unwrap());
            }
            assert_eq!(catalogue::resolve(&name, profile).unwrap(), jobs, "{name}");
            let show = catalogue::show_text(&name, profile).unwrap();
            let (header, rest) = show.split_once('\n').unwrap();
            assert_eq!(rest, shown, "{name}");
            headers.push_str(&format!("{header}\n"));
        }
        snapshot(&format!("suites-{}.txt", profile_name(profile)), &headers);
    }
}

#[test]
fn listing_and_show_print_the_recorded_text() {
    snapshot("list.txt", &catalogue::list_text());
    for profile in [Profile::Quick, Profile::Full] {
        let mut text = String::new();
        for e in catalogue::entries() {
            let name = e.name.to_string();
            text.push_str(&format!("==== workloads show {name}\n"));
            text.push_str(&catalogue::show_text(&name, profile).unwrap());
        }
        snapshot(&format!("show-{}.txt", profile_name(profile)), &text);
    }
}
