//! The built-in catalogue's values and the loader's rules and errors.

use super::*;
use crate::workload::testing::{assert_has, assert_starts};
use crate::workload::{BlockSizes, SyncMode};
use std::path::Path;
use std::time::Duration;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// Quick profile: most ramp of a time-bounded point.
const QUICK_RAMP: Duration = Duration::from_secs(1);
/// Quick profile: most time of any point (those bounded by io_size, and
/// those measuring several of a medium's periods).
const QUICK_IO_CAP: Duration = Duration::from_secs(20);
/// Quick profile: longest ramp of a point whose steady-state gate ends it
/// once the medium settles (ZFS's transaction groups: SQLIO).
const QUICK_GATED_RAMP: Duration = Duration::from_secs(40);

/// Doubling block sizes from `lo` to `hi` inclusive.
fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    std::iter::successors(Some(lo), |s| Some(s * 2))
        .take_while(|s| *s <= hi)
        .collect()
}

/// Every name in WORKLOADS.md, and storlab's own `dd-64k-mixed` (study
/// 002's read and write dd streams at once, its finding F002-7's "mixed").
const NAMES: &[&str] = &[
    "vsphere-shared-4k",
    "vsphere-shared-8k",
    "vsphere-oltp-8k",
    "vsphere-prepare",
    "db-8k-read",
    "blocksize-ramp-read",
    "seq-32k-duplex",
    "seq-32k-read",
    "sqlio-8k-randwrite",
    "sqlio-64k-write-8vm",
    "dd-64k-write",
    "dd-64k-read",
    "dd-64k-mixed",
    "dss-seq-read",
    "blocksize-sweep",
    "file-copy",
    "atto-sweep",
    "iometer-17",
    "ntfs-1",
    "ntfs-2",
    "ntfs-3",
    "ntfs-4",
    "ntfs-5",
    "exchange-1",
    "exchange-2",
    "exchange-3",
    "exchange-4",
    "exchange-5",
    "exchange-6",
    "sql-1",
    "sql-2",
    "sql-3",
    "sql-4",
    "backup",
    "restore",
    "vsphere-shared-4k-zipf",
    "vsphere-shared-8k-hotband",
    "vsphere-oltp-8k-bursty",
];

#[test]
fn every_name_resolves_and_validates() {
    for profile in [Profile::Full, Profile::Quick] {
        for name in NAMES {
            let job = get(name, profile).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(job.name, *name);
            assert_eq!(job.profile, Some(profile));
            assert_eq!(resolve(name, profile).unwrap(), vec![job]);
            show_text(name, profile).unwrap();
        }
        for s in ["vsphere-protocols", "nfs-vs-iscsi"] {
            let jobs = resolve(s, profile).unwrap();
            let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
            assert_eq!(names, Catalogue::builtin().suite(s).unwrap().workloads);
        }
    }
    assert_eq!(entries().len(), NAMES.len());
}

type Shape = Vec<(
    String,
    Vec<(String, u32, u32, u32, BlockSizes, u8, u8, u32)>,
)>;

fn shape(job: &Job) -> Shape {
    job.points
        .iter()
        .map(|p| {
            let groups = p
                .groups
                .iter()
                .map(|g| {
                    let a = &g.access;
                    let s = (
                        g.vms,
                        g.workers_per_vm,
                        g.disks_per_vm,
                        a.bs.clone(),
                        a.read_pct,
                        a.random_pct,
                    );
                    (g.name.clone(), s.0, s.1, s.2, s.3, s.4, s.5, a.iodepth)
                })
                .collect();
            (p.label.clone(), groups)
        })
        .collect()
}

#[test]
fn quick_keeps_the_shape() {
    for e in entries() {
        let full = get(&e.name, Profile::Full).unwrap();
        let quick = get(&e.name, Profile::Quick).unwrap();
        assert_eq!(shape(&full), shape(&quick), "{}", e.name);
        for p in &quick.points {
            // A point may ramp longer only with a steady-state gate to end
            // the ramp once the medium's periodic behaviour has settled.
            let ramp_cap = if p.steady.is_some() {
                QUICK_GATED_RAMP
            } else {
                QUICK_RAMP
            };
            assert!(
                p.ramp <= ramp_cap && p.runtime <= QUICK_IO_CAP,
                "{}",
                e.name
            );
            // Quick data spans fit the lab's 1 GiB store: large enough to be
            // several times the media's read caches, never more than it.
            assert!(crate::plan::single_target_need(p) <= GIB, "{}", e.name);
            assert!(p.io_limit.is_none_or(|b| b <= GIB), "{}", e.name);
        }
    }
}

#[test]
fn quick_vsphere_fits_a_laptop() {
    let job = get("vsphere-shared-4k", Profile::Quick).unwrap();
    let last = job.points.last().unwrap();
    let files: u64 = last
        .groups
        .iter()
        .map(|g| g.vms as u64 * g.disks_per_vm as u64)
        .sum();
    assert!(files * last.size <= GIB);
    let total: Duration = job.points.iter().map(|p| p.ramp + p.runtime).sum();
    assert!(total <= Duration::from_secs(20));
}

#[test]
fn study_values() {
    let j = get("vsphere-shared-4k", Profile::Full).unwrap();
    let vms: Vec<u32> = j.points.iter().map(|p| p.groups[0].vms).collect();
    assert_eq!(vms, [32, 64, 96, 128]);
    let p = &j.points[0];
    let g = &p.groups[0];
    assert_eq!(
        (g.workers_per_vm, g.disks_per_vm, g.access.iodepth),
        (1, 2, 2)
    );
    assert_eq!(
        (g.access.bs.max(), g.access.read_pct, g.access.random_pct),
        (4096, 75, 100)
    );
    assert_eq!(
        (p.size, p.ramp, p.runtime),
        (10 * GIB, Duration::from_secs(600), Duration::from_secs(300))
    );
    assert_eq!(
        j.points
            .iter()
            .map(|p| p.total_iodepth())
            .collect::<Vec<_>>(),
        [64, 128, 192, 256]
    );

    let o = get("vsphere-oltp-8k", Profile::Full).unwrap();
    assert_eq!(o.points[0].total_iodepth(), 128);
    assert_eq!(o.points[0].size, 200 * GIB);

    let d = get("seq-32k-duplex", Profile::Full).unwrap();
    assert_eq!(d.points.len(), 2);
    assert_eq!(d.points[0].groups.len(), 1);
    assert_eq!(d.points[1].groups.len(), 2);
    assert_eq!(d.points[1].groups[1].access.read_pct, 0);

    let r = get("blocksize-ramp-read", Profile::Full).unwrap();
    let sizes: Vec<u64> = r
        .points
        .iter()
        .map(|p| p.groups[0].access.bs.max())
        .collect();
    assert_eq!(sizes, doubling(512, MIB));
    assert_eq!((sizes.len(), r.points[0].groups[0].vms), (12, 8));

    let a = get("atto-sweep", Profile::Full).unwrap();
    assert_eq!(a.points.len(), 30);
    assert_eq!(a.points[0].label, "bs=512 write");
    assert_eq!(a.points[29].label, "bs=8m read");
    assert!(
        a.points
            .iter()
            .all(|p| p.direct && p.io_limit == Some(256 * MIB) && p.groups[0].access.iodepth == 4)
    );

    let s = get("sqlio-8k-randwrite", Profile::Full).unwrap();
    let p = &s.points[0];
    assert_eq!(
        (p.sync, p.size, p.runtime),
        (SyncMode::Sync, 32 * GIB, Duration::from_secs(300))
    );
    assert_eq!(
        (p.groups[0].workers_per_vm, p.groups[0].access.iodepth),
        (2, 4)
    );

    let dd = get("dd-64k-write", Profile::Full).unwrap();
    assert_eq!(dd.points[0].io_limit, Some(64 * GIB));
    let fc = get("file-copy", Profile::Full).unwrap();
    assert_eq!(fc.points[0].io_limit, Some(3124 * MIB));

    let i = get("iometer-17", Profile::Full).unwrap();
    assert_eq!(i.points.len(), 17);
    assert_eq!(i.points[10].label, "exchange-6");
    assert_eq!(
        (
            i.points[10].groups[0].access.read_pct,
            i.points[10].groups[0].access.random_pct
        ),
        (50, 50)
    );
}

#[test]
fn silent_values_say_so() {
    let j = get("db-8k-read", Profile::Full).unwrap();
    let iodepth = j.provenance.iter().find(|p| p.field == "iodepth").unwrap();
    assert_starts(&iodepth.source, "storlab default: study silent");
    let show = show_text("db-8k-read", Profile::Full).unwrap();
    assert!(
        show.contains("iodepth") && show.contains("study silent"),
        "{show}"
    );
    let show = show_text("vsphere-shared-4k", Profile::Full).unwrap();
    assert_has(&show, "study 000");
}

#[test]
fn unknown_names_list_the_catalogue() {
    let e = get("vsphere-4k", Profile::Full).unwrap_err().to_string();
    assert_starts(
        &e,
        "unknown workload \"vsphere-4k\" (allowed: vsphere-shared-4k, ",
    );
    assert_has(&e, "suites: vsphere-protocols, nfs-vs-iscsi");
    assert!(resolve("nope", Profile::Quick).is_err());
    assert!(show_text("nope", Profile::Quick).is_err());
    let e = get("nfs-vs-iscsi", Profile::Full).unwrap_err().to_string();
    assert_has(&e, "is a suite");
}

#[test]
fn listing() {
    let text = list_text();
    for name in NAMES {
        assert!(text.contains(name), "{name}");
    }
    assert!(text.contains("vsphere-protocols") && text.contains("nfs-vs-iscsi"));
}

/// A user catalogue file from `text`, named `name`, loaded over the built-in one.
fn user(name: &str, text: &str) -> Result<Catalogue, SpecError> {
    let mut cat = Catalogue::builtin().clone();
    load::load(&mut cat, text, Some(Path::new(name))).map(|()| cat)
}

fn user_err(text: &str) -> String {
    user("/cat/mine.toml", text).unwrap_err().to_string()
}

const MINE: &str = r#"
# a user's catalogue
[source]
seed = "in-house default"

[[workload]]
name = "my-oltp"
from = "vsphere-oltp-8k"
study = "in-house"
summary = "the OLTP mix on 4 VMs"
vms = 4
iodepth = { full = 64, quick = 8 }
[workload.source]
vms = "in-house: 4 VMs"
iodepth = "in-house: 64 per worker"

[[workload]]
name = "my-mix"
study = "in-house"
summary = "two block sizes"
runtime = { full = "1m", quick = "2s" }
[workload.sweep]
bs = ["4k", "8k"]
[workload.source]
runtime = { full = "in-house: a minute", quick = "quick: two seconds" }

[[suite]]
name = "mine"
summary = "mine, then a built-in"
workloads = ["my-oltp", "db-8k-read"]
"#;

#[test]
fn user_workloads_start_from_builtins_and_keep_their_notes() {
    let cat = user("/cat/mine.toml", MINE).unwrap_or_else(|e| panic!("{e}"));
    let base = get("vsphere-oltp-8k", Profile::Full).unwrap();
    let full = cat.get("my-oltp", Profile::Full).unwrap();
    let quick = cat.get("my-oltp", Profile::Quick).unwrap();
    let (g, q) = (&full.points[0].groups[0], &quick.points[0].groups[0]);
    assert_eq!((g.vms, g.workers_per_vm, g.access.iodepth), (4, 4, 64));
    assert_eq!(q.access.iodepth, 8);
    assert_eq!(full.points[0].size, base.points[0].size);
    assert_eq!(full.description, "the OLTP mix on 4 VMs");
    let src = |job: &Job, field: &str| {
        job.provenance
            .iter()
            .find(|p| p.field == field)
            .map(|p| p.source.clone())
            .unwrap_or_default()
    };
    // Its own notes replace the base's in place; the rest are the base's.
    let fields: Vec<&str> = full.provenance.iter().map(|p| p.field.as_str()).collect();
    let base_fields: Vec<&str> = base.provenance.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, base_fields);
    assert_eq!(src(&full, "vms"), "in-house: 4 VMs");
    assert_eq!(src(&full, "iodepth"), "in-house: 64 per worker");
    assert_eq!(
        src(&quick, "iodepth"),
        "storlab quick profile (full: 64; in-house: 64 per worker)"
    );
    assert_eq!(src(&full, "seed"), src(&base, "seed"));
    // A workload of its own gets the file's notes for what it leaves out.
    let mix = cat.get("my-mix", Profile::Quick).unwrap();
    assert_eq!(src(&mix, "runtime"), "quick: two seconds");
    assert_eq!(src(&mix, "seed"), "in-house default");
    assert_eq!(mix.points[1].label, "bs=8k");
    let jobs = cat.resolve("mine", Profile::Quick).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[1], get("db-8k-read", Profile::Quick).unwrap());
}

#[test]
fn storlabs_own_variants_are_named_as_storlabs_and_skew_or_pause() {
    let list = list_text();
    for name in [
        "vsphere-shared-4k-zipf",
        "vsphere-shared-8k-hotband",
        "vsphere-oltp-8k-bursty",
    ] {
        let line = list
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap();
        let from = line.split_whitespace().nth(1);
        assert_eq!(from, Some("storlab's"), "{line}");
    }
    let a = |name| {
        get(name, Profile::Quick).unwrap().points[0].groups[0]
            .access
            .clone()
    };
    assert_eq!(
        a("vsphere-shared-4k-zipf").distribution.to_string(),
        "zipf:1.1"
    );
    assert_eq!(
        a("vsphere-shared-8k-hotband").distribution.to_string(),
        "zoned:80/10:20/90"
    );
    let t = a("vsphere-oltp-8k-bursty").think.unwrap();
    assert_eq!((t.blocks, t.time), (32, Duration::from_millis(2)));
    // The rest is the study's mix.
    let (base, own) = (a("vsphere-shared-4k"), a("vsphere-shared-4k-zipf"));
    assert_eq!(
        (base.bs, base.read_pct, base.iodepth),
        (own.bs, own.read_pct, own.iodepth)
    );
}

#[test]
fn user_workloads_are_listed_and_shown_with_their_file() {
    let cat = user("/cat/mine.toml", MINE).unwrap();
    let list = cat.list_text();
    assert!(list.starts_with(&list_text()[..list_text().find("\nSuites:").unwrap()]));
    assert_has(
        &list,
        "\nWorkloads from /cat/mine.toml:\n  my-oltp                   study in-house  the OLTP mix on 4 VMs\n",
    );
    assert_has(
        &list,
        "\nSuites from /cat/mine.toml:\n  mine                   mine, then a built-in: my-oltp, db-8k-read\n",
    );
    let show = cat.show_text("my-oltp", Profile::Full).unwrap();
    assert_starts(
        &show,
        "my-oltp (study in-house, full profile, from /cat/mine.toml): the OLTP mix",
    );
    assert_has(
        &show,
        "iodepth             64               in-house: 64 per worker",
    );
}

#[test]
fn a_name_is_defined_once() {
    let e = user_err("[[workload]]\nname = \"db-8k-read\"\nstudy = \"x\"\nsummary = \"y\"\n");
    assert_eq!(
        e,
        "catalogue file /cat/mine.toml, line 1, workload \"db-8k-read\": invalid name = db-8k-read \
         (allowed: a name no other workload or suite has (db-8k-read is already defined in the built-in catalogue))"
    );
    let first = user(
        "/cat/a.toml",
        "[[workload]]\nname = \"x\"\nstudy = \"s\"\nsummary = \"y\"\n",
    )
    .unwrap();
    let mut cat = first.clone();
    let e = load::load(
        &mut cat,
        "\n[[suite]]\nname = \"x\"\nsummary = \"s\"\nworkloads = [\"x\"]\n",
        Some(Path::new("/cat/b.toml")),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("catalogue file /cat/b.toml, line 2, suite \"x\": invalid name = x")
            && e.contains("already defined in the catalogue file /cat/a.toml"),
        "{e}"
    );
}

#[test]
fn errors_name_the_file_line_workload_and_key() {
    let entry = |body: &str| {
        format!("\n[[workload]]\nname = \"w\"\nstudy = \"s\"\nsummary = \"y\"\n{body}")
    };
    let cases: &[(&str, &str)] = &[
        (
            "bsx = 4",
            "catalogue file /cat/mine.toml, line 2, workload \"w\": unknown key \"bsx\" (allowed: name, description, group, sweep, curve, label, point, study, summary, from, only, source, vms,",
        ),
        (
            "iodepth = { full = 4 }",
            "line 2, workload \"w\": invalid iodepth = { full = 4 } (allowed: { full = VALUE, quick = VALUE }",
        ),
        (
            "iodepth = { full = 4, quick = 0 }",
            "workload \"w\", quick profile: invalid iodepth = 0 (allowed: 1..=65536)",
        ),
        (
            "from = \"nope\"",
            "workload \"w\": invalid from = nope (allowed: a workload defined before this one (vsphere-shared-4k,",
        ),
        (
            "only = [\"nope\"]",
            "workload \"w\": invalid only = \"nope\" (allowed: labels of its load points: w)",
        ),
        (
            "[workload.source]\nbsize = \"x\"",
            "workload \"w\", [source]: unknown key \"bsize\" (allowed: vms, numjobs, disks, bs,",
        ),
        (
            "[workload.source]\nbs = 4",
            "workload \"w\", [source]: invalid bs = 4 (allowed: a note (string), or { full = NOTE, quick = NOTE })",
        ),
    ];
    for (body, want) in cases {
        let e = user_err(&entry(body));
        assert!(e.contains(want), "{body}:\n{e}\nwants {want}");
    }
    assert_eq!(
        user_err("\n\n[[workload]]\nname = \"w\"\nsummary = \"y\"\n"),
        "catalogue file /cat/mine.toml, line 3, workload \"w\": invalid study = (none) (allowed: a string naming the study it comes from)"
    );
    assert_has(
        &user_err("[[workload]]\nname = \"a b\"\n"),
        "invalid name = a b (allowed: letters, digits",
    );
    assert_eq!(
        user_err("direct = 2\n"),
        "catalogue file /cat/mine.toml: invalid direct = 2 (allowed: 0, 1, true, false)"
    );
    assert_starts(
        &user_err("suites = 1\n"),
        "catalogue file /cat/mine.toml: unknown key \"suites\" (allowed: source, workload, suite, vms",
    );
    assert_starts(
        &user_err("[[suite]]\nname = \"s\"\nsummary = \"y\"\nworkloads = [\"nope\"]\n"),
        "catalogue file /cat/mine.toml, line 1, suite \"s\": invalid workloads = \"nope\" (allowed: names of workloads (vsphere-shared-4k,",
    );
    assert_starts(
        &user_err("[[workload]\n"),
        "catalogue file /cat/mine.toml, line 1: invalid TOML syntax",
    );
}

#[test]
fn files_are_read_once_and_missing_ones_named() {
    let dir = crate::workload::testing::temp_dir("catalogue");
    let file = dir.join("mine.toml");
    std::fs::write(&file, MINE).unwrap();
    let cat = Catalogue::with_files(&[file.clone(), file.clone()]);
    let missing = Catalogue::with_files(&[dir.join("nope.toml")]);
    std::fs::remove_dir_all(&dir).unwrap();
    let cat = cat.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cat.entries().len(), entries().len() + 2);
    let e = missing.unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "invalid catalogue file = {}",
            dir.join("nope.toml").display()
        )) && e.contains("(allowed: a readable TOML file in the storlab catalogue format)"),
        "{e}"
    );
}
