//! `storlab meta` runs as first-class results (issue 15, item 4): recorded
//! in the results database (`--db`, `$STORLAB_DB`, `--no-db`), listed and
//! shown by `storlab results`, rendered by `storlab report`, compared by
//! `storlab results diff` (and refused, in one line naming both kinds,
//! against a block run); a run that fails or is killed mid-run keeps what it
//! measured; a database of the previous schema version is migrated.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{TempDir, storlab, text};

const ALL: &str = "create=1,write=1,read=1,stat=1,rename=1,delete=1,list=1";
const OPS: [&str; 7] = [
    "create", "write", "read", "stat", "rename", "delete", "list",
];

/// storlab with `$STORLAB_DB` unset unless the test sets it.
fn cmd() -> Command {
    let mut c = storlab();
    c.env_remove("STORLAB_DB");
    c
}

fn out(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    println!("{c:?}\n{}", text(&o));
    o
}

/// `storlab ARGS --db DB`, which must succeed; its standard output.
fn ok(db: &Path, args: &[&str]) -> String {
    let o = out(cmd().args(args).arg("--db").arg(db));
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A short run of the full mix on `target`, its `--json` in `json`.
fn mix(target: &str, db: &Path, json: &Path) -> String {
    ok(
        db,
        &[
            "meta",
            "--target",
            target,
            "--dirs",
            "2",
            "--files",
            "5",
            "--file-size",
            "1k",
            "--mix",
            ALL,
            "--threads",
            "2",
            "--runtime",
            "0.5",
            "--json",
            json.to_str().unwrap(),
        ],
    )
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The lines of `results list` (one per run).
fn list(db: &Path) -> Vec<String> {
    ok(db, &["results", "list"])
        .lines()
        .map(String::from)
        .collect()
}

/// The run document `results export` gives for `id`.
fn export(db: &Path, id: &str) -> Value {
    serde_json::from_str(&ok(db, &["results", "export", id])).unwrap()
}

#[test]
fn meta_runs_are_listed_shown_reported_and_diffed() {
    let d = TempDir::new("metadb", "target");
    let o = TempDir::new("metadb", "out");
    let db = o.join("results.db");
    let target = format!("file:{}", d.path().display());
    mix(&target, &db, &o.join("m1.json"));
    mix(&target, &db, &o.join("m2.json"));
    let copy = o.join("c.json");
    ok(
        &db,
        &[
            "meta",
            "--target",
            &target,
            "--copy",
            "1m",
            "--bs",
            "256k",
            "--json",
            copy.to_str().unwrap(),
        ],
    );

    // The list: three runs, their kinds, status and target.
    let l = list(&db);
    assert_eq!(l.len(), 3, "{l:?}");
    for (line, (id, kind)) in l.iter().zip([("1", "meta"), ("2", "meta"), ("3", "copy")]) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], id, "{line}");
        assert_eq!(words[4], kind, "{line}");
        assert_eq!(words[5], "complete", "{line}");
        assert!(line.contains(&format!("[{target}]")), "{line}");
    }

    // What the database holds is what the run measured: the exported run
    // document's `meta` is the `--json` document, tagged with its kind.
    for (id, json, kind) in [("1", "m1.json", "meta"), ("3", "c.json", "copy")] {
        let mut exported = export(&db, id);
        assert_eq!(exported["jobs"], Value::Array(vec![]), "run {id}");
        let meta = exported["meta"].as_object_mut().unwrap();
        assert_eq!(meta.remove("kind"), Some(Value::from(kind)));
        assert_eq!(
            Value::Object(meta.clone()),
            read_json(&o.join(json)),
            "run {id}"
        );
    }
    // As CSV: a row per operation type that ran, its count as in the JSON.
    let m1 = read_json(&o.join("m1.json"));
    let csv = ok(&db, &["results", "export", "1", "--format", "csv"]);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(head[0], "operation", "{csv}");
    let at = head.iter().position(|&h| h == "ops").expect(&csv);
    let ran: Vec<&Value> = m1["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|op| op["count"].as_u64().unwrap() > 0)
        .collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), ran.len(), "{csv}");
    for (r, op) in rows.iter().zip(&ran) {
        assert_eq!(r.len(), head.len(), "{csv}");
        assert_eq!(r[0], op["op"].as_str().unwrap(), "{csv}");
        assert_eq!(r[at], op["count"].as_u64().unwrap().to_string(), "{csv}");
    }
    for op in m1["ops"].as_array().unwrap() {
        assert!(op["count"].as_u64().unwrap() > 0, "{op}");
        assert_eq!(op["errors"], 0, "{op}");
    }

    // `results show`: the per-operation table, one row per operation type
    // with its count as measured.
    let show = ok(&db, &["results", "show", "1"]);
    assert!(
        show.contains("operation") && show.contains("ops/s"),
        "{show}"
    );
    assert!(
        show.contains("2 dirs x 5 files of 1 KiB, 2 threads"),
        "{show}"
    );
    for op in m1["ops"].as_array().unwrap() {
        let name = op["op"].as_str().unwrap();
        let row = show
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in {show}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], op["count"].to_string(), "{row}");
        assert_eq!(cells[2], "0", "{row}");
    }
    let show = ok(&db, &["results", "show", "3"]);
    for dir in ["write", "read"] {
        assert!(
            show.lines()
                .any(|l| l.starts_with(dir) && l.contains(" 4 ")),
            "{dir}: {show}"
        );
    }

    // The report: the op rows of both mix runs and the copy's, in Markdown,
    // HTML and CSV.
    let md = ok(&db, &["report", "1", "2", "3", "--format", "markdown"]);
    assert!(md.contains("## File and metadata operations"), "{md}");
    assert!(md.contains("## Large-file copy"), "{md}");
    assert!(!md.contains("Baseline"), "meta runs have no baseline: {md}");
    for run in ["run 1", "run 2"] {
        for op in OPS {
            assert!(md.contains(&format!("| {run} | {op} | ")), "{run} {op}");
        }
    }
    for dir in ["write", "read"] {
        assert!(md.contains(&format!("| run 3 | {dir} | 4 | 0 | ")), "{dir}");
    }
    let html = ok(&db, &["report", "1", "3", "--format", "html"]);
    assert!(
        html.contains("<h2>File and metadata operations (storlab meta)</h2>"),
        "{html}"
    );
    assert!(html.contains("<td>run 1</td><td>rename</td>"), "{html}");
    assert!(html.contains("<td>run 3</td><td>read</td>"), "{html}");
    assert!(!html.contains("http://") && !html.contains("https://"));
    let csv = ok(&db, &["report", "1", "2", "--format", "csv"]);
    for op in OPS {
        let line = csv
            .lines()
            .find(|l| l.starts_with(&format!("ops_s,meta,{op},{target},")))
            .unwrap_or_else(|| panic!("no ops_s line of {op}: {csv}"));
        // Two runs: n = 2.
        assert_eq!(line.split(',').nth(5), Some("2"), "{line}");
    }
    // The `--json` files report as the database's runs do (their op rows),
    // and say what a bare document does not record.
    let (m1_file, c_file) = (o.join("m1.json"), o.join("c.json"));
    let md = ok(
        &db,
        &[
            "report",
            m1_file.to_str().unwrap(),
            c_file.to_str().unwrap(),
            "--format",
            "markdown",
        ],
    );
    let name = m1_file.display().to_string();
    for op in OPS {
        assert!(md.contains(&format!("| {name} | {op} | ")), "{op}: {md}");
    }
    assert!(md.contains("## Large-file copy"), "{md}");
    assert!(
        md.contains(&format!("| {name} | – | complete | not recorded |")),
        "{md}"
    );
    let bare = o.join("bare.json");
    std::fs::write(&bare, r#"{"format_version": 1, "ops": "many"}"#).unwrap();
    let e = out(cmd()
        .args(["report", bare.to_str().unwrap(), "--db"])
        .arg(&db));
    assert!(
        !e.status.success()
            && text(&e).contains(&format!(
                "{}: malformed `storlab meta --json` document",
                bare.display()
            )),
        "{}",
        text(&e)
    );
    // A mixed report: the block tables and the meta table.
    ok(
        &db,
        &[
            "run",
            "--target",
            "null:",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--runtime",
            "1",
            "--quiet",
        ],
    );
    let md = ok(&db, &["report", "4", "1", "--format", "markdown"]);
    assert!(md.contains("Baseline: null: = 100"), "{md}");
    assert!(md.contains("| run 1 | stat | "), "{md}");

    // The diff of two meta runs: ops/s per operation type, each named.
    let diff = ok(&db, &["results", "diff", "1", "2"]);
    for op in OPS {
        assert!(
            diff.contains(&format!("meta · {op} · {target}")),
            "{op}: {diff}"
        );
    }
    let j: Value =
        serde_json::from_str(&ok(&db, &["results", "diff", "1", "2", "--format", "json"])).unwrap();
    let m2 = read_json(&o.join("m2.json"));
    for (i, op) in OPS.iter().enumerate() {
        let c = j["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["point"] == *op && c["metric"] == "ops_s")
            .unwrap_or_else(|| panic!("no ops_s change of {op}"));
        assert_eq!(c["old"], m1["ops"][i]["ops_per_s"], "{op}");
        assert_eq!(c["new"], m2["ops"][i]["ops_per_s"], "{op}");
        assert_eq!(c["verdict"], "no_noise_estimate", "one run a side: {c}");
    }
    // A side of two runs against one.
    ok(&db, &["results", "diff", "1,2", "2"]);

    // Kinds mixed: one line naming both.
    for (a, b, says) in [
        ("1", "3", "run 1 is a meta run and run 3 a copy run"),
        ("4", "2", "run 4 is a block run and run 2 a meta run"),
        ("1,4", "2", "runs 1, 4 mixes block and meta runs"),
    ] {
        let o = out(cmd().args(["results", "diff", a, b, "--db"]).arg(&db));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
}

#[test]
fn db_flags_mirror_run() {
    let d = TempDir::new("metadb", "flags");
    let o = TempDir::new("metadb", "flagsdb");
    let env_db = o.join("env.db");
    let target = format!("file:{}", d.path().display());
    let meta = |extra: &[&str]| {
        let mut c = cmd();
        c.env("STORLAB_DB", &env_db).args([
            "meta",
            "--target",
            &target,
            "--dirs",
            "1",
            "--files",
            "2",
            "--runtime",
            "0.2",
        ]);
        let o = out(c.args(extra));
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // $STORLAB_DB when no --db.
    let err = meta(&[]);
    assert!(err.contains("saved as run 1"), "{err}");
    assert_eq!(list(&env_db).len(), 1);
    // --no-db: nothing recorded, nothing said.
    let err = meta(&["--no-db"]);
    assert!(!err.contains("saved"), "{err}");
    assert_eq!(list(&env_db).len(), 1);
    // --db wins over $STORLAB_DB.
    let other = o.join("other.db");
    meta(&["--db", other.to_str().unwrap()]);
    assert_eq!(list(&env_db).len(), 1);
    assert_eq!(list(&other).len(), 1);
    // A database that is not storlab's is refused before anything runs.
    let notes = o.join("notes.txt");
    std::fs::write(&notes, "not a database\n".repeat(50)).unwrap();
    let o = out(cmd()
        .args(["meta", "--target", &target, "--db"])
        .arg(&notes));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a storlab results database"),
        "{}",
        text(&o)
    );
    assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
}

#[test]
fn a_failed_or_killed_run_keeps_what_it_measured() {
    let d = TempDir::new("metadb", "fail");
    let o = TempDir::new("metadb", "faildb");
    let db = o.join("results.db");
    let json = o.join("failed.json");
    let target = format!("file:{}", d.path().display());
    // One directory, pulled from under the workers mid-mix: the next
    // operation on it fails and ends the run.
    let child = cmd()
        .args([
            "meta",
            "--target",
            &target,
            "--name",
            "run",
            "--dirs",
            "1",
            "--files",
            "20",
            "--mix",
            ALL,
            "--threads",
            "2",
            "--runtime",
            "30",
            "--db",
        ])
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tree = d.join("run/d0000");
    let t0 = Instant::now();
    while !tree.is_dir() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    while tree.exists() && t0.elapsed() < Duration::from_secs(25) {
        let _ = std::fs::remove_dir_all(&tree);
    }
    let r = child.wait_with_output().unwrap();
    println!("{}", text(&r));
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("saved as run 1"), "{err}");
    let l = list(&db);
    assert!(l[0].contains(" meta ") && l[0].contains(" error "), "{l:?}");
    let rec = export(&db, "1");
    let e = rec["error"].as_str().expect("the run's error");
    assert_eq!(rec["meta"]["error"].as_str(), Some(e));
    let ops = rec["meta"]["ops"].as_array().unwrap();
    let done: u64 = ops.iter().map(|o| o["count"].as_u64().unwrap()).sum();
    let errors: u64 = ops.iter().map(|o| o["errors"].as_u64().unwrap()).sum();
    assert!(done > 0, "what was measured before the failure was kept");
    assert!(errors >= 1, "the failed operation is counted: {ops:?}");
    // The --json document holds the same, with the error.
    let doc = read_json(&json);
    assert_eq!(doc["error"].as_str(), Some(e));
    assert_eq!(doc["ops"], rec["meta"]["ops"]);
    let show = ok(&db, &["results", "show", "1"]);
    assert!(show.contains("ended by an error"), "{show}");
    let _ = std::fs::remove_dir_all(d.join("run"));

    // Killed: the run stays listed, incomplete, with its target and spec.
    let mut child = cmd()
        .args([
            "meta",
            "--target",
            &target,
            "--name",
            "killed",
            "--runtime",
            "30",
            "--db",
        ])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !d.join("killed/d0000").is_dir() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) with a PID this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    child.wait().unwrap();
    let l = list(&db);
    assert_eq!(l.len(), 2, "{l:?}");
    assert!(
        l[1].contains(" meta ") && l[1].contains("incomplete") && l[1].contains(&target),
        "{l:?}"
    );
    let show = ok(&db, &["results", "show", "2"]);
    assert!(show.contains("10 dirs x 100 files of 4 KiB"), "{show}");
}

#[test]
fn a_previous_version_database_is_migrated() {
    let o = TempDir::new("metadb", "migrate");
    let d = TempDir::new("metadb", "migtarget");
    let db = o.join("v4.db");
    let previous = storlab::store::schema::VERSION - 1;
    {
        // The schema as the previous storlab left it, with one block run.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE schema_version (app TEXT NOT NULL, version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES ('storlab', 0);",
        )
        .unwrap();
        for sql in &storlab::store::schema::MIGRATIONS[..previous as usize] {
            c.execute_batch(sql).unwrap();
        }
        c.execute("UPDATE schema_version SET version = ?1", [previous])
            .unwrap();
        c.execute_batch(
            r#"INSERT INTO runs (record_schema, record_version, command, environment,
                                 started_unix, status, complete, interrupted)
               VALUES ('storlab.run', 1, '["storlab","run"]',
                       '{"hostname":"old","kernel":"k","os":"o","cpu_model":"c","cores":1,
                         "memory_bytes":1,"storlab_version":"0"}',
                       1700000000.0, 'complete', 1, 0);"#,
        )
        .unwrap();
    }
    let l = list(&db);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(
        l[0].contains(" block ") && l[0].contains("complete"),
        "{l:?}"
    );
    let target = format!("file:{}", d.path().display());
    mix(&target, &db, &o.join("m.json"));
    let l = list(&db);
    assert!(l[0].contains(" block "), "{l:?}");
    assert!(l[1].contains(" meta "), "{l:?}");
    assert!(ok(&db, &["results", "show", "1"]).contains("on old"));
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: u32 = c
        .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, storlab::store::schema::VERSION);
    let kinds: Vec<String> = c
        .prepare("SELECT kind FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kinds, ["block", "meta"]);
    let ops: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM meta_ops WHERE run_id = 2 AND count > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ops, OPS.len() as i64);
}
