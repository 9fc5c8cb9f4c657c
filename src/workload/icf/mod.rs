//! Iometer configurations in: `storlab run --icf FILE.icf` and `storlab
//! convert FILE.icf`.
//!
//! An Iometer test of type NORMAL runs each worker's assigned access
//! specifications in turn, each for the run time after the ramp-up; storlab
//! runs one load point per step. Each disk worker becomes a storlab VM whose
//! disks are its targets (the files or devices `--target` names; an .icf's
//! Windows drive names mean nothing here), with `iodepth` = its outstanding
//! I/Os per target x its targets. Workers with the same settings are one
//! group of that many VMs. An access specification's lines become a block
//! size mix (`bssplit`, weights = % of size); `align` 0 (sector boundaries)
//! is `blockalign = 512`. Iometer does unbuffered I/O on its targets, so
//! `direct = true`.
//!
//! A transfer delay and burst length become `thinktime` (the delay, in ms)
//! and `thinktime_blocks` (the burst): each worker issues a burst, waits for
//! it to complete, then pauses.
//!
//! What storlab cannot run as Iometer would (network workers, cycling test
//! types, lines of one specification with different read or random shares,
//! delays or bursts) is refused, one line each naming the
//! file, the line and the key.

mod lex;
pub mod read;

use super::import::{ImportErrors, Imported, PointKeys, job_table, size_text, value};
use super::validate::SpecError;
use read::{AccessSpec, Config, Worker};
use std::path::Path;
use toml::Value;

/// Load an Iometer configuration file.
pub fn load(path: &Path) -> Result<Imported, ImportErrors> {
    let text = super::import::read(path, "Iometer configuration")?;
    parse(&text, &path.display().to_string())
}

/// The storlab job of .icf text; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<Imported, ImportErrors> {
    let (_, entries) = lex::entries(text, origin)?;
    let config = read::config(&entries, origin).map_err(ImportErrors)?;
    let (table, notes) = to_table(&config, origin).map_err(ImportErrors)?;
    Imported::new(
        table,
        format!("Iometer configuration {origin}"),
        Vec::new(),
        notes,
    )
    .map_err(Into::into)
}

/// An access specification as group keys.
fn access(spec: &AccessSpec, origin: &str) -> Result<Vec<(String, Value)>, SpecError> {
    let at = |line: usize| format!("{origin}, line {line}");
    let lines: Vec<_> = spec.lines.iter().filter(|l| l.share > 0).collect();
    let Some(first) = lines.first() else {
        return Err(SpecError::invalid(
            "access specification",
            &spec.name,
            "at least one 'size,% of size,... line with a share above 0",
        )
        .context(at(spec.line)));
    };
    let total: u32 = lines.iter().map(|l| l.share).sum();
    if total != 100 {
        return Err(
            SpecError::invalid("% of size", total, "shares adding up to 100")
                .context(at(spec.line)),
        );
    }
    for l in &lines[1..] {
        let shape = |l: &read::SpecLine| (l.reads, l.random, l.align, l.delay_ms, l.burst);
        if shape(l) != shape(first) {
            return Err(SpecError::invalid(
                "access specification line",
                format!(
                    "{}% reads, {}% random, align {}, delay {}, burst {}",
                    l.reads, l.random, l.align, l.delay_ms, l.burst
                ),
                format!(
                    "the reads, random, align, delay and burst of the specification's first \
                     line ({}, {}, {}, {}, {}): storlab mixes block sizes within one access \
                     pattern",
                    first.reads, first.random, first.align, first.delay_ms, first.burst
                ),
            )
            .context(at(l.line)));
        }
    }
    let mut keys = Vec::new();
    if lines.len() == 1 {
        keys.push(("bs".to_string(), value(&size_text(first.size))));
    } else {
        let mix: Vec<String> = lines
            .iter()
            .map(|l| format!("{}/{}", size_text(l.size), l.share))
            .collect();
        keys.push(("bssplit".to_string(), Value::String(mix.join(":"))));
    }
    keys.push(("rwmixread".into(), Value::Integer(first.reads.into())));
    keys.push((
        "percentage_random".into(),
        Value::Integer(first.random.into()),
    ));
    let align = if first.align == 0 { 512 } else { first.align };
    keys.push(("blockalign".into(), value(&size_text(align))));
    if first.delay_ms > 0 {
        keys.push((
            "thinktime".into(),
            Value::String(format!("{}ms", first.delay_ms)),
        ));
        keys.push((
            "thinktime_blocks".into(),
            Value::Integer(first.burst as i64),
        ));
    }
    Ok(keys)
}

/// What makes two workers the same group.
fn class_key(w: &Worker) -> (u32, u32, Vec<&str>) {
    (
        w.oio.max(1),
        w.targets,
        w.specs.iter().map(|(n, _)| n.as_str()).collect(),
    )
}

/// Keys by name: an access specification's, or a group's.
type NamedKeys = Vec<(String, Vec<(String, Value)>)>;

/// The storlab job-file table of a configuration, and its notes.
fn to_table(c: &Config, origin: &str) -> Result<(toml::Table, Vec<String>), Vec<SpecError>> {
    let groups_keys = check(c, origin)?;

    // Workers with the same settings are one group of that many VMs.
    let mut classes: Vec<(&Worker, u32)> = Vec::new();
    for w in &c.workers {
        match classes
            .iter_mut()
            .find(|(x, _)| class_key(x) == class_key(w))
        {
            Some((_, n)) => *n += 1,
            None => classes.push((w, 1)),
        }
    }
    let f = c.workers.first().expect("workers checked");
    let (table, notes) = point_keys(c, f, origin);
    let group_name = |k: usize, spec: &str| {
        if classes.len() == 1 {
            spec.to_string()
        } else {
            format!("worker{}: {spec}", k + 1)
        }
    };
    let mut groups: NamedKeys = Vec::new();
    for (k, (w, n)) in classes.iter().enumerate() {
        for (spec, _) in &w.specs {
            let name = group_name(k, spec);
            if groups.iter().any(|(g, _)| *g == name) {
                continue;
            }
            let iodepth = w.oio.max(1).saturating_mul(w.targets);
            let mut keys = vec![
                ("vms".to_string(), Value::Integer((*n).into())),
                ("disks".to_string(), Value::Integer(w.targets.into())),
                ("iodepth".to_string(), Value::Integer(iodepth.into())),
            ];
            let access = groups_keys.iter().find(|(s, _)| s == spec);
            keys.extend(access.expect("names checked").1.iter().cloned());
            groups.push((name, keys));
        }
    }
    let steps = classes
        .iter()
        .map(|(w, _)| w.specs.len())
        .max()
        .unwrap_or(0);
    let points = (0..steps)
        .map(|i| {
            let mut labels: Vec<&str> = Vec::new();
            let mut names = Vec::new();
            for (k, (w, _)) in classes.iter().enumerate() {
                if let Some((spec, _)) = w.specs.get(i) {
                    if !labels.contains(&spec.as_str()) {
                        labels.push(spec);
                    }
                    names.push(group_name(k, spec));
                }
            }
            PointKeys {
                label: labels.join(" + "),
                groups: names,
                keys: Vec::new(),
            }
        })
        .collect();
    Ok((job_table(table, groups, points), notes))
}

/// Every problem of a configuration, one line each; else each access
/// specification's group keys, by name.
fn check(c: &Config, origin: &str) -> Result<NamedKeys, Vec<SpecError>> {
    let at = |line: usize| format!("{origin}, line {line}");
    let mut errors = Vec::new();
    if c.workers.is_empty() {
        errors.push(
            SpecError::invalid(
                "'Worker",
                "(none)",
                "at least one disk worker in the 'MANAGER LIST",
            )
            .context(origin),
        );
    }
    if c.run_s == 0 {
        errors.push(
            SpecError::invalid(
                "Run Time",
                "0 0 0",
                "above 0 (storlab does not run until stopped)",
            )
            .context(at(c.run_line.max(1))),
        );
    }
    let names: Vec<&str> = c.specs.iter().map(|s| s.name.as_str()).collect();
    let first = c.workers.first();
    for w in &c.workers {
        if w.targets == 0 {
            errors.push(
                SpecError::invalid("'Target", "(none)", "at least one target per worker")
                    .context(at(w.line)),
            );
        }
        if w.specs.is_empty() {
            errors.push(
                SpecError::invalid(
                    "'Assigned access specs",
                    "(none)",
                    "at least one access specification",
                )
                .context(at(w.line)),
            );
        }
        for (name, line) in &w.specs {
            if !names.contains(&name.as_str()) {
                errors.push(
                    SpecError::unknown("access specification", name, names.join(", "))
                        .context(at(*line)),
                );
            }
        }
        if let Some(f) = first {
            let region = |w: &Worker| (w.max_sectors, w.start_sector, w.pattern, w.seed);
            if region(w) != region(f) {
                errors.push(
                    SpecError::invalid(
                        "Disk maximum size,starting sector,Data pattern / fixed seed",
                        format!("{:?}", region(w)),
                        format!("the same as the first worker's ({:?}): storlab gives every disk of a load point one region, content and seed", region(f)),
                    )
                    .context(at(w.line)),
                );
            }
        }
    }
    let mut groups_keys: NamedKeys = Vec::new();
    for s in &c.specs {
        match access(s, origin) {
            Ok(k) => groups_keys.push((s.name.clone(), k)),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(groups_keys)
}

/// The keys every group of the load points shares (region, time, I/O mode,
/// content, seed), from the first worker `f`, and the notes on them.
fn point_keys(c: &Config, f: &Worker, origin: &str) -> (toml::Table, Vec<String>) {
    let mut notes = vec![
        "each Iometer worker is a storlab VM whose disks are its targets (give them with --target); \
         iodepth = outstanding I/Os per target x targets"
            .to_string(),
        "Iometer does unbuffered I/O on its targets: direct = true".to_string(),
    ];
    let mut table = toml::Table::new();
    let stem = Path::new(origin)
        .file_stem()
        .map_or("iometer".into(), |s| s.to_string_lossy().into_owned());
    table.insert("name".into(), Value::String(stem.clone()));
    let description = if c.description.is_empty() {
        format!("Iometer configuration {stem}")
    } else {
        c.description.clone()
    };
    table.insert("description".into(), Value::String(description));
    if f.max_sectors > 0 {
        table.insert("size".into(), value(&size_text(f.max_sectors * 512)));
    } else {
        notes.push("Disk maximum size 0 (the whole disk): storlab uses its default region (64 MiB); set --size".into());
    }
    if f.start_sector > 0 {
        table.insert("offset".into(), value(&size_text(f.start_sector * 512)));
    }
    table.insert("ramp_time".into(), Value::Integer(c.ramp_s as i64));
    table.insert("runtime".into(), Value::Integer(c.run_s as i64));
    table.insert("direct".into(), Value::Boolean(true));
    match f.pattern {
        Some(0) => {
            table.insert("content".into(), Value::String("zeros".into()));
            notes.push(
                "Data pattern 0 (repeating bytes): storlab writes zeros; both compress entirely"
                    .into(),
            );
        }
        Some(1) => {
            table.insert(
                "content".into(),
                Value::String("compress=0,dedupe=100".into()),
            );
            notes.push(
                "Data pattern 1 (pseudo random): every block is one random block (dedupe = 100)"
                    .into(),
            );
        }
        _ => {}
    }
    if let Some(seed) = f.seed {
        table.insert("seed".into(), Value::Integer(seed as i64));
    }
    (table, notes)
}

#[cfg(test)]
mod tests;
