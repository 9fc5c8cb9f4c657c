//! fio job files in: `storlab run --fio JOB.fio` and `storlab convert JOB.fio`.
//!
//! Each fio job section becomes a storlab group (`[[group]]`) and each run of
//! jobs between two `stonewall`s a load point (`[[point]]`): fio starts the
//! jobs of one stonewall group together, as storlab runs a point's groups.
//! `[global]` options apply to the jobs after them. The options are written
//! into a storlab job-file table and read through the same key parsers and
//! validation as any job file ([`Imported`]), so a value means the same.
//!
//! What storlab cannot do as fio would (trim, per-direction `bs=4k,8k`,
//! `fsync=N`, zipf and other random distributions, a fio option storlab does
//! not run, such as `verify`: `refused.rs`) is refused, every one of them,
//! one line each naming the file, the line and the option; a name fio does
//! not have is an unknown option, listing the supported ones. Where storlab runs the same workload with a detail of
//! its own, a note says so (`convert` prints them as comments).
//!
//! fio's steady-state options become storlab's gate over the period fio
//! watches (`steady.rs`).
//!
//! Layout: with `filename` (one file or device) all of a job's `numjobs`
//! clones share it, as in fio: one storlab VM with `numjobs` workers over one
//! disk, `disk_layout = "shared"` (every job uses `[offset, offset+size)`).
//! With `directory` (or neither) fio gives each clone a file of its own: a
//! VM per clone, each with its own file in the directory.

pub mod ini;
mod options;
mod refused;
mod steady;

use super::import::{ImportErrors, Imported, PointKeys, check_key, job_table, value};
use super::validate::SpecError;
use options::{JobOpts, map_job};
use std::path::Path;
use toml::Value;

/// Load a fio job file.
pub fn load(path: &Path) -> Result<Imported, ImportErrors> {
    let text = super::import::read(path, "fio job")?;
    parse(&text, &path.display().to_string())
}

/// The storlab job of fio job-file text; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<Imported, ImportErrors> {
    let sections = ini::parse(text, origin).map_err(ImportErrors)?;
    let mut errors = Vec::new();
    let mut global: Vec<ini::Opt> = Vec::new();
    let mut jobs = Vec::new();
    for s in &sections {
        if s.name == "global" {
            // A later [global] changes the defaults of the jobs after it.
            global.extend(s.opts.iter().cloned());
            continue;
        }
        let opts = JobOpts::new(s, &global);
        match map_job(&opts, origin) {
            Ok(job) => jobs.push(job),
            // An option inherited from [global] is wrong once, not once per job.
            Err(e) => errors.extend(
                e.into_iter()
                    .filter(|e| !errors.contains(e))
                    .collect::<Vec<_>>(),
            ),
        }
    }
    if jobs.is_empty() && errors.is_empty() {
        errors.push(
            SpecError::invalid(
                "job section",
                "(none)",
                "at least one [JOB] section besides [global]",
            )
            .context(origin),
        );
    }
    if !errors.is_empty() {
        return Err(ImportErrors(errors));
    }
    let table = assemble(&jobs, origin)?;
    let mut notes: Vec<String> = Vec::new();
    for j in &jobs {
        for n in &j.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let targets = jobs[0].target.iter().map(|(t, _)| t.clone()).collect();
    Imported::new(table, format!("fio job file {origin}"), targets, notes).map_err(Into::into)
}

/// The storlab table of the mapped jobs: groups, and the points the
/// stonewalls make. Jobs running together must agree on the per-point keys
/// and on the target.
fn assemble(jobs: &[options::Mapped], origin: &str) -> Result<toml::Table, ImportErrors> {
    let mut errors = Vec::new();
    // Points: runs of jobs, each started by a stonewall (the first always).
    let mut points: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        if i == 0 || j.stonewall {
            points.push(vec![i]);
        } else {
            if let Some(line) = j.new_group {
                errors.push(
                    SpecError::invalid(
                        "new_group",
                        "without stonewall",
                        "new_group with stonewall (storlab reports the jobs that run together as one load point)",
                    )
                    .context(format!("{origin}, line {line}")),
                );
            }
            points.last_mut().expect("first job opens a point").push(i);
        }
    }
    let first = &jobs[0];
    for j in &jobs[1..] {
        if j.target.as_ref().map(|t| &t.0) != first.target.as_ref().map(|t| &t.0) {
            let line = j.target.as_ref().map_or(j.line, |t| t.1);
            errors.push(
                SpecError::invalid(
                    "filename/directory/ioengine",
                    j.target.as_ref().map_or("(none)", |t| t.0.as_str()),
                    format!(
                        "the target of job [{}] ({}): storlab runs every job of a file on one target",
                        first.name,
                        first.target.as_ref().map_or("(none)", |t| t.0.as_str())
                    ),
                )
                .context(format!("{origin}, line {line}")),
            );
        }
    }
    for p in &points {
        let lead = &jobs[p[0]];
        for &i in &p[1..] {
            for (key, v, line) in &jobs[i].point {
                // One line per line of the file (io_size follows size's line).
                if errors.iter().any(|e: &SpecError| {
                    e.context.as_deref() == Some(&format!("{origin}, line {line}"))
                }) {
                    continue;
                }
                let theirs = lead
                    .point
                    .iter()
                    .find(|(k, _, _)| k == key)
                    .map(|(_, v, _)| v);
                if theirs != Some(v) {
                    errors.push(
                        SpecError::invalid(
                            key,
                            text(v),
                            format!(
                                "the same as job [{}] beside it ({}): jobs between two stonewalls \
                                 are one storlab load point with one {key}; add stonewall to run it after",
                                lead.name,
                                theirs.map_or("unset".to_string(), text)
                            ),
                        )
                        .context(format!("{origin}, line {line}")),
                    );
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(ImportErrors(errors));
    }

    let stem = Path::new(origin)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "fio".into());
    let mut table = toml::Table::new();
    table.insert("name".into(), Value::String(stem.clone()));
    let description = jobs
        .iter()
        .find_map(|j| j.description.clone())
        .unwrap_or_else(|| {
            format!(
                "fio job file {}",
                Path::new(origin)
                    .file_name()
                    .map_or(stem.clone(), |f| f.to_string_lossy().into_owned())
            )
        });
    table.insert("description".into(), Value::String(description));
    let names = unique_names(jobs);
    let groups = jobs
        .iter()
        .zip(&names)
        .map(|(j, name)| (name.clone(), j.group.clone()))
        .collect();
    let points = points
        .iter()
        .map(|p| PointKeys {
            label: p
                .iter()
                .map(|&i| names[i].as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            groups: p.iter().map(|&i| names[i].clone()).collect(),
            keys: jobs[p[0]]
                .point
                .iter()
                .map(|(k, v, _)| (k.clone(), v.clone()))
                .collect(),
        })
        .collect();
    Ok(job_table(table, groups, points))
}

/// A value as the user wrote it (no TOML quotes).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Job names made unique in file order ("job", "job-2").
fn unique_names(jobs: &[options::Mapped]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for j in jobs {
        let mut name = j.name.clone();
        let mut n = 1;
        while out.contains(&name) {
            n += 1;
            name = format!("{}-{n}", j.name);
        }
        out.push(name);
    }
    out
}

/// A storlab key's value checked where fio wrote it, or the error.
fn checked(key: &str, text: &str, at: &str) -> Result<Value, SpecError> {
    let v = value(text);
    check_key(key, &v, at)?;
    Ok(v)
}

#[cfg(test)]
mod tests;
