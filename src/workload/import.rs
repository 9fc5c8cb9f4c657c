//! What an importer ([`fio`](super::fio), [`icf`](super::icf)) hands back: a
//! job-file table in storlab's own format, the job that table validates to
//! (through [`jobfile::job_from_table`], the one path every job file takes),
//! the targets the foreign file named, and notes on what changed meaning.
//! `storlab convert` prints [`Imported::to_toml`]; `storlab run --fio/--icf`
//! runs [`Imported::job`].

use super::Job;
use super::jobfile::{self, job_from_table};
use super::validate::SpecError;
use std::path::Path;
use toml::Value;

/// A foreign job file read into storlab's format.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The storlab job-file table (what `storlab convert` prints).
    pub table: toml::Table,
    /// The validated job it describes.
    pub job: Job,
    /// Targets the file named (fio's `filename`/`directory`/`ioengine`),
    /// used when the command line gives none; empty when it named none.
    pub targets: Vec<String>,
    /// Where storlab's run differs in detail from the foreign tool's, one
    /// line each (printed as comments by `convert`, on stderr by `run`).
    pub notes: Vec<String>,
    /// The file it came from and its format ("fio job file").
    pub origin: String,
}

impl Imported {
    /// Validate `table` as a storlab job file (`origin` names the foreign file).
    pub fn new(
        table: toml::Table,
        origin: String,
        targets: Vec<String>,
        notes: Vec<String>,
    ) -> Result<Imported, SpecError> {
        let stem = Path::new(&origin)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let job = job_from_table(&table, &stem, &[])
            .map_err(|e| e.context(format!("{origin} (as a storlab job)")))?;
        Ok(Imported {
            table,
            job,
            targets,
            notes,
            origin,
        })
    }

    /// The storlab TOML job file, with the origin, targets and notes as
    /// comments; `storlab run --job` reads it back to the same job.
    pub fn to_toml(&self) -> String {
        let mut out = format!("# storlab job file converted from {}\n", self.origin);
        if !self.targets.is_empty() {
            let flags: Vec<String> = self
                .targets
                .iter()
                .map(|t| format!("--target {t}"))
                .collect();
            out.push_str(&format!(
                "# its target: storlab run --job THIS.toml {}\n",
                flags.join(" ")
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("# note: {n}\n"));
        }
        out.push('\n');
        out.push_str(&toml::to_string(&self.table).expect("a TOML table always serialises"));
        out
    }
}

/// One load point of an imported job.
pub struct PointKeys {
    /// Its label.
    pub label: String,
    /// The groups it runs.
    pub groups: Vec<String>,
    /// Its own per-point keys.
    pub keys: Vec<(String, Value)>,
}

/// The job-file table of `head` (name, description, keys every point
/// shares), the groups (name, keys) and the points. One point's label and
/// keys go at the top level; several points, or a label with braces (the top
/// level reads `{KEY}` as a swept value), are `[[point]]`s.
pub fn job_table(
    mut head: toml::Table,
    groups: Vec<(String, Vec<(String, Value)>)>,
    points: Vec<PointKeys>,
) -> toml::Table {
    let listed = points.len() > 1 || points.iter().any(|p| p.label.contains(['{', '}']));
    let table = |pairs: Vec<(String, Value)>| Value::Table(pairs.into_iter().collect());
    if let ([p], false) = (points.as_slice(), listed) {
        head.insert("label".into(), Value::String(p.label.clone()));
        head.extend(p.keys.iter().cloned());
    }
    let groups = groups
        .into_iter()
        .map(|(name, keys)| {
            let mut pairs = vec![("name".to_string(), Value::String(name))];
            pairs.extend(keys);
            table(pairs)
        })
        .collect();
    head.insert("group".into(), Value::Array(groups));
    if listed {
        let points = points
            .into_iter()
            .map(|p| {
                let names = p.groups.into_iter().map(Value::String).collect();
                let mut pairs = vec![
                    ("label".to_string(), Value::String(p.label)),
                    ("groups".to_string(), Value::Array(names)),
                ];
                pairs.extend(p.keys);
                table(pairs)
            })
            .collect();
        head.insert("point".into(), Value::Array(points));
    }
    head
}

/// Everything wrong with a foreign file, one [`SpecError`] (one line) each,
/// so the user fixes them all in one pass; nothing runs half-configured.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportErrors(pub Vec<SpecError>);

impl std::fmt::Display for ImportErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines: Vec<String> = self.0.iter().map(|e| e.to_string()).collect();
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for ImportErrors {}

impl From<SpecError> for ImportErrors {
    fn from(e: SpecError) -> Self {
        ImportErrors(vec![e])
    }
}

/// A value as the job file should show it: integers as integers, `true` and
/// `false` as booleans, anything else as a string. Every form reads back
/// through the same key parsers ([`super::settings::Settings::set`]).
pub fn value(text: &str) -> Value {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Value::Integer(i);
    }
    match t {
        "true" => Value::Boolean(true),
        "false" => Value::Boolean(false),
        _ => Value::String(t.to_string()),
    }
}

/// A byte count as a job file shows it: exact, in the largest binary unit
/// that divides it ("50GiB", "64KiB", "1000").
pub fn size_text(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Read a foreign file as text, or an error naming it and its `format`.
pub fn read(path: &Path, format: &str) -> Result<String, SpecError> {
    std::fs::read_to_string(path).map_err(|e| {
        SpecError::invalid(
            format!("{format} file"),
            format!("{} ({e})", path.display()),
            format!("a readable {format} file"),
        )
    })
}

/// Check one key's value through the job-file parsers, so a bad value is
/// named where the foreign file wrote it (`at`: "x.fio, line 7").
pub fn check_key(key: &str, v: &Value, at: &str) -> Result<(), SpecError> {
    jobfile::Settings::default()
        .set(key, v)
        .map_err(|e| e.context(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_their_natural_type() {
        assert_eq!(value(" 32 "), Value::Integer(32));
        assert_eq!(value("true"), Value::Boolean(true));
        assert_eq!(value("4k"), Value::String("4k".into()));
        assert_eq!(
            (
                size_text(50 << 30),
                size_text(4096),
                size_text(1536),
                size_text(1000)
            ),
            ("50GiB".into(), "4KiB".into(), "1536".into(), "1000".into())
        );
        assert!(
            check_key("bs", &value("4q"), "x.fio, line 3")
                .unwrap_err()
                .to_string()
                .starts_with("x.fio, line 3: invalid bs = 4q")
        );
    }
}
