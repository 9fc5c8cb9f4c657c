//! A `storlab run` in the background (its JSON and results database in a
//! test's directory), waited for with a bound and killed on drop.

use super::{storlab, text};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use storlab::store::Store;

/// A `storlab run` in the background, writing its JSON and its database into `dir`.
pub struct Run {
    child: Option<Child>,
    /// The run's JSON.
    pub json: PathBuf,
    /// The run's results database.
    pub db: PathBuf,
}

impl Run {
    pub fn start(dir: &Path, tag: &str, args: &[&str]) -> Run {
        Run::start_cmd(storlab(), dir, tag, args)
    }

    /// [`Run::start`] with a prepared command (its environment).
    pub fn start_cmd(mut cmd: Command, dir: &Path, tag: &str, args: &[&str]) -> Run {
        let json = dir.join(format!("{tag}.json"));
        let db = dir.join(format!("{tag}.db"));
        let child = cmd
            .arg("run")
            .args(args)
            .args(["-q", "--json"])
            .arg(&json)
            .arg("--db")
            .arg(&db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Run {
            child: Some(child),
            json,
            db,
        }
    }

    /// The process ID of the run (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Wait up to `bound` for the run to end; it is killed (and the test
    /// fails) if it does not. Returns the exit status, stderr and how long the
    /// wait took.
    pub fn wait(&mut self, bound: Duration, what: &str) -> (ExitStatus, String, Duration) {
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if start.elapsed() > bound {
                let _ = child.kill();
                let o = child.wait_with_output().unwrap();
                panic!(
                    "{what}: storlab still ran {bound:?} after the fault: {}",
                    text(&o)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = start.elapsed();
        let o = child.wait_with_output().unwrap();
        (
            o.status,
            String::from_utf8_lossy(&o.stderr).into_owned(),
            took,
        )
    }

    pub fn doc(&self) -> serde_json::Value {
        let bytes =
            std::fs::read(&self.json).unwrap_or_else(|e| panic!("{}: {e}", self.json.display()));
        serde_json::from_slice(&bytes).unwrap()
    }

    /// The intervals of the run's only point, from the JSON; the database
    /// must hold the same ones. Returns them.
    pub fn intervals(&self, what: &str) -> Vec<serde_json::Value> {
        let doc = self.doc();
        let json = doc["jobs"][0]["points"][0]["intervals"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no point in the JSON: {doc}"))
            .clone();
        let store = Store::open(&self.db).unwrap();
        let runs = store.list_runs().unwrap();
        assert_eq!(runs.len(), 1, "{what}: one run in the database");
        let rec = serde_json::to_value(store.load_run(runs[0].id).unwrap()).unwrap();
        let db = rec["jobs"][0]["points"][0]["intervals"].as_array().unwrap();
        assert_eq!(
            db.len(),
            json.len(),
            "{what}: the database holds the intervals of the JSON"
        );
        for (a, b) in db.iter().zip(&json) {
            assert_eq!(a["stats"], b["stats"], "{what}: interval {}", a["index"]);
        }
        assert_eq!(
            rec["error"], doc["error"],
            "{what}: the error is in the database"
        );
        json
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The sum over a run's intervals (of its first point) of a statistic:
/// `stats.DIR.KEY` (`dir` "read" or "write"), or `stats.KEY` when `dir` is "".
pub fn total(doc: &serde_json::Value, dir: &str, key: &str) -> u64 {
    doc["jobs"][0]["points"][0]["intervals"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|i| {
            let s = &i["stats"];
            let v = if dir.is_empty() {
                &s[key]
            } else {
                &s[dir][key]
            };
            v.as_u64().unwrap_or(0)
        })
        .sum()
}
