//! Reading one catalogue file into a [`Catalogue`]: its defaults, its
//! workloads (each built in both profiles through the job-file parser, with
//! the provenance of its values) and its suites.

use super::super::jobfile::{
    GROUP_KEYS, SPEC_KEYS, job_from_table, non_empty_array, parse_toml, string_key, tables,
};
use super::super::settings::Settings;
use super::super::validate::SpecError;
use super::super::{Job, Profile, Provenance};
use super::{Catalogue, Entry, Suite, show};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toml::Value;

/// Top-level keys of a catalogue file beside the default settings.
const FILE_KEYS: &[&str] = &["source", "workload", "suite"];
/// Keys of a `[[workload]]` beside the job-file keys.
const ENTRY_KEYS: &[&str] = &["study", "summary", "from", "only", "source"];
/// Keys an entry does not take over from the one it names in `from`.
const OWN_KEYS: &[&str] = &["name", "summary", "description", "from", "only"];
/// Keys of a `[[suite]]`.
const SUITE_KEYS: &[&str] = &["name", "summary", "workloads"];

/// How the origin reads in errors: "built-in catalogue", "catalogue file PATH".
pub(super) fn origin_text(origin: Option<&Path>) -> String {
    match origin {
        None => "built-in catalogue".to_string(),
        Some(p) => format!("catalogue file {}", p.display()),
    }
}

/// The 1-based line of each `[[key]]` header, in order; empty when the count
/// does not match `n` (the tables were written some other way).
fn header_lines(text: &str, key: &str, n: usize) -> Vec<usize> {
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            l.strip_prefix("[[")
                .and_then(|l| l.split_once("]]"))
                .is_some_and(|(inner, _)| inner.trim() == key)
        })
        .map(|(i, _)| i + 1)
        .collect();
    if lines.len() == n { lines } else { Vec::new() }
}

/// Whether `t` is `{ full = ..., quick = ... }`: one value per profile.
fn is_per_profile(t: &toml::Table) -> bool {
    t.len() == Profile::ALL.len() && Profile::ALL.iter().all(|p| t.contains_key(p.name()))
}

/// `v` in `profile`: every `{ full = ..., quick = ... }` inside it replaced
/// by the profile's value; the keys given that way are added to `per_profile`.
fn select(
    key: &str,
    v: &Value,
    profile: Profile,
    per_profile: &mut BTreeSet<String>,
) -> Result<Value, SpecError> {
    Ok(match v {
        Value::Table(t) if Profile::ALL.iter().any(|p| t.contains_key(p.name())) => {
            if !is_per_profile(t) {
                return Err(SpecError::invalid(
                    key,
                    v.to_string(),
                    "{ full = VALUE, quick = VALUE }: one value per profile, both given",
                ));
            }
            per_profile.insert(field_of(key).to_string());
            t[profile.name()].clone()
        }
        Value::Table(t) => Value::Table(
            t.iter()
                .map(|(k, v)| Ok((k.clone(), select(k, v, profile, per_profile)?)))
                .collect::<Result<_, SpecError>>()?,
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| select(key, v, profile, per_profile))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// Check a `source` table: each key a field `show` prints, each note a
/// string or one string per profile.
fn check_sources(v: &Value) -> Result<&toml::Table, SpecError> {
    let Value::Table(sources) = v else {
        return Err(SpecError::invalid(
            "source",
            v.to_string(),
            "a [source] table of notes by key",
        ));
    };
    for (field, note) in sources {
        if !show::fields().any(|f| f == field) {
            let allowed: Vec<&str> = show::fields().collect();
            return Err(
                SpecError::unknown("key", field.as_str(), allowed.join(", ")).context("[source]"),
            );
        }
        let per_profile = note
            .as_table()
            .is_some_and(|t| is_per_profile(t) && t.values().all(Value::is_str));
        if !(note.is_str() || per_profile) {
            return Err(SpecError::invalid(
                field,
                note.to_string(),
                "a note (string), or { full = NOTE, quick = NOTE }",
            )
            .context("[source]"));
        }
    }
    Ok(sources)
}

/// The provenance of `profile`'s values, in the order of the notes. A plain
/// note on a value given per profile reads, in the quick profile, as the
/// quick profile's with the full value named.
fn provenance(
    sources: &toml::Table,
    per_profile: &BTreeSet<String>,
    profile: Profile,
    full: &Job,
) -> Vec<Provenance> {
    sources
        .iter()
        .map(|(field, note)| {
            let source = match note {
                Value::String(s) if profile == Profile::Quick && per_profile.contains(field) => {
                    format!(
                        "storlab quick profile (full: {}; {s})",
                        show::full_value(full, field)
                    )
                }
                Value::String(s) => s.clone(),
                notes => notes[profile.name()]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            };
            Provenance {
                field: field.clone(),
                source,
            }
        })
        .collect()
}

/// Keep the load points `only` names, in its order.
fn keep_only(job: &mut Job, only: &Value) -> Result<(), SpecError> {
    let labels: Vec<&str> = job.points.iter().map(|p| p.label.as_str()).collect();
    let allowed = format!("labels of its load points: {}", labels.join(", "));
    let kept = non_empty_array("only", only, &allowed)?
        .iter()
        .map(|want| {
            job.points
                .iter()
                .find(|p| want.as_str() == Some(p.label.as_str()))
                .cloned()
                .ok_or_else(|| SpecError::invalid("only", want.to_string(), &allowed))
        })
        .collect::<Result<_, _>>()?;
    job.points = kept;
    Ok(())
}

/// The field a key's value is shown as.
fn field_of(key: &str) -> &str {
    match key {
        "bssplit" => "bs",
        "rate_iops" => "rate",
        k => k,
    }
}

/// A required string key.
fn required(table: &toml::Table, key: &str, what: &str) -> Result<String, SpecError> {
    string_key(table, key)?.ok_or_else(|| SpecError::invalid(key, "(none)", what))
}

/// A workload or suite name: what the command line can pass as one word.
fn check_name(name: &str) -> Result<(), SpecError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(SpecError::invalid(
            "name",
            name,
            "letters, digits, '-', '_' and '.'",
        ))
    }
}

/// Reads one file into a catalogue.
struct Loader<'a> {
    cat: &'a mut Catalogue,
    origin: Option<PathBuf>,
    /// The file's defaults: settings and `source` notes for its workloads.
    defaults: toml::Table,
}

impl Loader<'_> {
    /// Refuse a name some workload or suite already has, naming where.
    fn check_new(&self, name: &str) -> Result<(), SpecError> {
        check_name(name)?;
        let before = self
            .cat
            .entry(name)
            .map(|e| e.origin.as_deref())
            .or_else(|| self.cat.suite(name).map(|s| s.origin.as_deref()));
        match before {
            None => Ok(()),
            Some(origin) => Err(SpecError::invalid(
                "name",
                name,
                format!(
                    "a name no other workload or suite has ({name} is already defined in the {})",
                    origin_text(origin)
                ),
            )),
        }
    }

    /// The file's defaults, checked in both profiles.
    fn set_defaults(&mut self, table: &toml::Table) -> Result<(), SpecError> {
        for (key, v) in table {
            if FILE_KEYS.contains(&key.as_str()) {
                if key == "source" {
                    check_sources(v)?;
                    self.defaults.insert(key.clone(), v.clone());
                }
                continue;
            }
            if !GROUP_KEYS.contains(&key.as_str()) && !SPEC_KEYS.contains(&key.as_str()) {
                let allowed: Vec<&str> = FILE_KEYS
                    .iter()
                    .chain(GROUP_KEYS)
                    .chain(SPEC_KEYS)
                    .copied()
                    .collect();
                return Err(SpecError::unknown("key", key.as_str(), allowed.join(", ")));
            }
            for profile in Profile::ALL {
                Settings::default().set(key, &select(key, v, profile, &mut BTreeSet::new())?)?;
            }
            self.defaults.insert(key.clone(), v.clone());
        }
        Ok(())
    }

    /// The entry's keys: those of the workload it comes `from` (but its own
    /// name, summary, description, `from` and `only`), its own over them
    /// (`source` note by note), then the file's defaults for what is left.
    fn resolve(&self, own: &toml::Table) -> Result<toml::Table, SpecError> {
        let mut table = match string_key(own, "from")? {
            None => toml::Table::new(),
            Some(base) => {
                let entry = self.cat.entry(&base).ok_or_else(|| {
                    let names: Vec<&str> =
                        self.cat.entries.iter().map(|e| e.name.as_str()).collect();
                    SpecError::invalid(
                        "from",
                        &base,
                        format!("a workload defined before this one ({})", names.join(", ")),
                    )
                })?;
                let mut t = entry.table.clone();
                t.retain(|k, _| !OWN_KEYS.contains(&k));
                t
            }
        };
        layer(&mut table, own, true);
        layer(&mut table, &self.defaults, false);
        Ok(table)
    }

    /// One `[[workload]]`, built in both profiles.
    fn entry(&self, own: &toml::Table) -> Result<Entry, SpecError> {
        let name = required(own, "name", "a string naming the workload")?;
        self.check_new(&name)?;
        let table = self.resolve(own)?;
        let study = required(&table, "study", "a string naming the study it comes from")?;
        let summary = required(&table, "summary", "one line for the listing")?;
        let description = string_key(&table, "description")?.unwrap_or_else(|| summary.clone());
        let empty = Value::Table(toml::Table::new());
        let sources = check_sources(table.get("source").unwrap_or(&empty))?;
        let mut per_profile = BTreeSet::new();
        let mut build = |profile: Profile| -> Result<Job, SpecError> {
            let mut selected = toml::Table::new();
            for (key, v) in table.iter().filter(|(k, _)| *k != "source") {
                let v = select(key, v, profile, &mut per_profile)?;
                selected.insert(key.clone(), v);
            }
            let mut job = job_from_table(&selected, &name, ENTRY_KEYS)?;
            if let Some(only) = table.get("only") {
                keep_only(&mut job, only)?;
            }
            job.profile = Some(profile);
            job.description = description.clone();
            Ok(job)
        };
        let mut full = build(Profile::Full)?;
        // The full profile built, so what fails now is the quick profile's own.
        let mut quick = build(Profile::Quick).map_err(|e| e.context("quick profile"))?;
        full.provenance = provenance(sources, &per_profile, Profile::Full, &full);
        quick.provenance = provenance(sources, &per_profile, Profile::Quick, &full);
        Ok(Entry {
            name,
            study,
            summary,
            origin: self.origin.clone(),
            table,
            full,
            quick,
        })
    }

    /// One `[[suite]]`: workloads of this file or one read before it.
    fn suite(&self, t: &toml::Table) -> Result<Suite, SpecError> {
        let name = required(t, "name", "a string naming the suite")?;
        self.check_new(&name)?;
        if let Some(k) = t.keys().find(|k| !SUITE_KEYS.contains(&k.as_str())) {
            return Err(SpecError::unknown("key", k.as_str(), SUITE_KEYS.join(", ")));
        }
        let summary = required(t, "summary", "one line for the listing")?;
        let names: Vec<&str> = self.cat.entries.iter().map(|e| e.name.as_str()).collect();
        let allowed = format!("names of workloads ({})", names.join(", "));
        let empty = Value::Array(Vec::new());
        let workloads =
            non_empty_array("workloads", t.get("workloads").unwrap_or(&empty), &allowed)?
                .iter()
                .map(|w| match w.as_str() {
                    Some(w) if names.contains(&w) => Ok(w.to_string()),
                    _ => Err(SpecError::invalid("workloads", w.to_string(), &allowed)),
                })
                .collect::<Result<_, _>>()?;
        Ok(Suite {
            name,
            summary,
            workloads,
            origin: self.origin.clone(),
        })
    }
}

/// Lay `over`'s keys onto `table`: with `replace`, each replaces the key in
/// place (new keys go last); without, only missing keys are added. `source`
/// notes are laid key by key the same way.
fn layer(table: &mut toml::Table, over: &toml::Table, replace: bool) {
    for (key, v) in over {
        match (table.get_mut(key), v) {
            (Some(Value::Table(notes)), Value::Table(more)) if key == "source" => {
                layer(notes, more, replace);
            }
            (Some(_), _) if !replace => {}
            _ => {
                table.insert(key.clone(), v.clone());
            }
        }
    }
}

/// Read catalogue text (`origin`: its file, `None` for the built-in one) into
/// `cat`: its workloads, then its suites. Errors name the file, the line and
/// name of the workload or suite, and the key.
pub(super) fn load(
    cat: &mut Catalogue,
    text: &str,
    origin: Option<&Path>,
) -> Result<(), SpecError> {
    let file = origin_text(origin);
    let table = parse_toml(text, "catalogue").map_err(|e| e.context(&file))?;
    let mut loader = Loader {
        cat,
        origin: origin.map(Path::to_path_buf),
        defaults: toml::Table::new(),
    };
    loader.set_defaults(&table).map_err(|e| e.context(&file))?;
    for kind in ["workload", "suite"] {
        let Some(v) = table.get(kind) else { continue };
        let items = tables(kind, v).map_err(|e| e.context(&file))?;
        let lines = header_lines(text, kind, items.len());
        for (i, (ctx, t)) in items.into_iter().enumerate() {
            let at = match (lines.get(i), t.get("name").and_then(Value::as_str)) {
                (Some(line), Some(name)) => format!("{file}, line {line}, {kind} \"{name}\""),
                (Some(line), None) => format!("{file}, line {line}, {ctx}"),
                (None, Some(name)) => format!("{file}, {kind} \"{name}\""),
                (None, None) => format!("{file}, {ctx}"),
            };
            if kind == "workload" {
                let entry = loader.entry(t).map_err(|e| e.context(&at))?;
                loader.cat.entries.push(entry);
            } else {
                let suite = loader.suite(t).map_err(|e| e.context(&at))?;
                loader.cat.suites.push(suite);
            }
        }
    }
    Ok(())
}
