//! TOML job files: a user-defined [`Job`].
//!
//! Keys use fio's names where fio has one. Every key is optional; what is not
//! given takes the default shown. Sizes are binary (`4k` = 4096, see
//! [`units`](super::units)); durations take a bare number as seconds.
//!
//! ```toml
//! name = "my-oltp"              # default: the file's stem
//! description = "8k OLTP-like random mix"
//! curve = [10, 50, 100]         # vdbench-style curve: each load point runs unthrottled to
//!                               # find its max IOPS, then once per percentage of it with an
//!                               # open-loop rate; true = 10, 50, 70, 80, 90, 100; default none
//!
//! # Per-point settings
//! size = "1GiB"                 # region used on each disk (and created file size); default 64 MiB
//! offset = "0"                  # start of the region on each disk; default 0
//! disk_layout = "slice"         # single target (file, device, LUN, export): "slice" gives
//!                               # disk k its own [offset + k*size, +size); "shared": every
//!                               # disk uses [offset, offset + size); default "slice"
//! runtime = "60s"               # measured time; default 10 s; 0 = until io_size is done
//! ramp_time = "10s"             # warm-up excluded from the summary; default 0
//! interval = "1s"               # statistics interval, 10 ms ..= 1 h; default 1 s
//! io_size = "256MiB"            # stop each worker after this many bytes; default unset
//!                               # (with io_size and no runtime, the time is unbounded)
//! io_timeout = "30s"            # an I/O in flight longer ends the run with an error naming
//!                               # it; default 30 s; 0 or "none" = no limit
//! direct = true                 # O_DIRECT; default false (also 0 / 1)
//! sync = "none"                 # "none" | "dsync" | "sync"; true = "sync", false = "none"
//! content = "random"            # "random" | "zeros" | { compress = 50, dedupe = 20 }
//! seed = 1                      # default 0x57021ab
//! verify = true                 # self-describing blocks, every read checked (docs/verify.md); default false
//! journal = "/var/tmp/j.jrnl"   # durability journal of acknowledged writes (implies verify); default none
//!
//! # Group settings: written at top level they describe the single group, or
//! # act as defaults for every [[group]] below.
//! vms = 1                       # identical VMs (worker groups); default 1
//! numjobs = 4                   # workers per VM; default 1
//! disks = 2                     # disks (files / LUNs) per VM; default 1
//! bs = "8k"                     # or bssplit = "4k/50:8k/50" (fio syntax); default 4k
//! rw = "randrw"                 # read|write|randread|randwrite|rw|readwrite|randrw; default randread
//! rwmixread = 60                # read share of rw / randrw; default 50
//! percentage_random = 100       # overrides the random share implied by rw
//! random_distribution = "zipf:1.2"  # where random offsets fall: random (default) | zipf:THETA |
//!                               # pareto:H | normal:SIGMA% (each [:CENTER]) | zoned:A%/S%:... |
//!                               # zoned_abs:A%/SIZE:... (fio's syntax, workload::skew)
//! thinktime = "2ms"             # pause after each burst (bare number: microseconds, as fio)
//! thinktime_blocks = 8          # I/Os per burst, issued and completed before the pause; default 1
//! thinktime_spin = "500us"      # how much of the pause spins the CPU; default 0
//! iodepth = 32                  # outstanding I/Os per worker; default 1
//! rate_iops = 5000              # per-worker cap; or rate = "10MiB" (bytes per second)
//! rate_mode = "closed"          # "closed" (fio-like: a stall delays the schedule, latency
//!                               # from submission) | "open" (fixed schedule, latency from
//!                               # each I/O's scheduled time); default "closed"
//! blockalign = "4k"             # offset alignment; default the smallest block size
//!
//! [[group]]                     # optional: several groups run together
//! name = "readers"              # default "group1", "group2", ...
//! vms = 2
//! rw = "read"
//!
//! [[group]]
//! name = "writers"
//! rw = "write"
//!
//! [sweep]                       # load points: the cartesian product, first key outermost
//! vms = [32, 64, 96, 128]       # allowed: vms, numjobs, iodepth, bs, rw, rwmixread, rate_iops,
//!                               # rate_mode
//! ```
//!
//! A top-level `label` names the single load point (default: the job's name), or
//! the sweep's points with `{KEY}` standing for a swept value: `label = "{vms} VMs"`
//! gives "32 VMs", "64 VMs", ... (default: "vms=32", "vms=64", ...).
//!
//! Instead of a `[sweep]`, load points may be listed, each with a label, its own
//! keys (group or per-point keys) and optionally the groups it runs:
//!
//! ```toml
//! [[point]]
//! label = "reads"
//! groups = ["readers"]          # default: every group
//!
//! [[point]]
//! label = "reads+writes, 256k"
//! bs = "256k"
//! ```
//!
//! fio's `rw` semantics: `read` is 100% read, 0% random; `write` 0/0;
//! `randread` 100/100; `randwrite` 0/100; `rw`/`readwrite` a sequential mix with
//! `rwmixread`% reads (default 50); `randrw` the random mix. `percentage_random`
//! overrides the random share; `rwmixread` without `rw` sets the read share of
//! whatever pattern is in place.
//!
//! Settings layer: defaults, then top-level keys, then the group's keys, then the
//! sweep point's or listed point's.
//!
//! The same keys drive the fio-named CLI flags ([`flags`](super::flags)) through
//! [`Settings`], so both accept exactly the same values.

use super::Job;
pub use super::settings::{GROUP_KEYS, SPEC_KEYS, Settings, job_from_settings};
use super::validate::{SpecError, validate_job};
pub use super::{DEFAULT_SEED, default_group, default_spec};
use std::path::Path;
use toml::Value;

/// Keys that may be swept over in `[sweep]`.
pub const SWEEP_KEYS: &[&str] = &[
    "vms",
    "numjobs",
    "iodepth",
    "bs",
    "rw",
    "rwmixread",
    "rate_iops",
    "rate_mode",
];
/// Top-level keys other than the group and spec keys.
const FILE_KEYS: &[&str] = &[
    "name",
    "description",
    "group",
    "sweep",
    "curve",
    "label",
    "point",
];
/// Keys of a `[[point]]` other than the group and spec keys.
const POINT_KEYS: &[&str] = &["label", "groups"];

/// Load and validate a job file.
pub fn load(path: &Path) -> Result<Job, SpecError> {
    let origin = path.display().to_string();
    let text = read_text(path, "job")?;
    parse(&text, &origin)
}

/// Parse and validate job-file text; `origin` names the file in errors and
/// its stem is the default job name.
pub fn parse(text: &str, origin: &str) -> Result<Job, SpecError> {
    let stem = Path::new(origin)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse_toml(text, "job")
        .and_then(|table| job_from_table(&table, &stem, &[]))
        .map_err(|e| e.context(format!("job file {origin}")))
}

/// The text of a `format` ("job", "catalogue") file, or an error naming it.
pub(crate) fn read_text(path: &Path, format: &str) -> Result<String, SpecError> {
    std::fs::read_to_string(path).map_err(|e| {
        SpecError::invalid(
            format!("{format} file"),
            format!("{} ({e})", path.display()),
            format!("a readable TOML file in the storlab {format} format"),
        )
    })
}

/// TOML text as a table (keys in file order); a syntax error names its line.
pub(crate) fn parse_toml(text: &str, format: &str) -> Result<toml::Table, SpecError> {
    toml::from_str(text).map_err(|e| {
        let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        let err = SpecError::invalid(
            "TOML syntax",
            msg,
            format!("TOML (toml.io) in the storlab {format} format"),
        );
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                err.context(format!("line {line}"))
            }
            None => err,
        }
    })
}

/// Settings from a table, with `extra` keys allowed (and skipped) beside `keys`.
pub(crate) fn settings_from(
    table: &toml::Table,
    keys: &[&[&str]],
    extra: &[&str],
) -> Result<Settings, SpecError> {
    let mut s = Settings::default();
    for (k, v) in table {
        if extra.contains(&k.as_str()) {
            continue;
        }
        if !keys.iter().any(|ks| ks.contains(&k.as_str())) {
            let mut allowed: Vec<&str> = extra.to_vec();
            for ks in keys {
                allowed.extend_from_slice(ks);
            }
            return Err(SpecError::unknown("key", k.as_str(), allowed.join(", ")));
        }
        s.set(k, v)?;
    }
    Ok(s)
}

/// The string at `key`, if given.
pub(crate) fn string_key(table: &toml::Table, key: &str) -> Result<Option<String>, SpecError> {
    match table.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(SpecError::invalid(key, v.to_string(), "a string")),
    }
}

fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `key`'s value as a non-empty array, or an error saying what `key` takes.
pub(crate) fn non_empty_array<'a>(
    key: &str,
    v: &'a Value,
    allowed: &str,
) -> Result<&'a [Value], SpecError> {
    match v {
        Value::Array(items) if !items.is_empty() => Ok(items),
        other => Err(SpecError::invalid(key, other.to_string(), allowed)),
    }
}

/// The tables of `[[key]]`, each with its context ("[[group]] 2") for errors.
pub(crate) fn tables<'a>(
    key: &str,
    v: &'a Value,
) -> Result<Vec<(String, &'a toml::Table)>, SpecError> {
    let allowed = format!("one or more [[{key}]] tables");
    non_empty_array(key, v, &allowed)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let ctx = format!("[[{key}]] {}", i + 1);
            let t = item.as_table().ok_or_else(|| {
                SpecError::invalid(key, item.to_string(), format!("a table ([[{key}]])"))
                    .context(&ctx)
            })?;
            Ok((ctx, t))
        })
        .collect()
}

/// One load point before it is resolved: its label, its own settings and the
/// groups it runs (`None`: all).
struct Point {
    label: String,
    settings: Settings,
    groups: Option<Vec<String>>,
}

/// A label with `{KEY}` standing for the value of a swept key (`values`).
fn render_label(template: &str, values: &[(String, String)]) -> Result<String, SpecError> {
    let bad = || {
        let keys: Vec<String> = values.iter().map(|(k, _)| format!("{{{k}}}")).collect();
        let keys = if keys.is_empty() {
            "none: no [sweep]".to_string()
        } else {
            keys.join(", ")
        };
        SpecError::invalid(
            "label",
            template,
            format!("text, with {{KEY}} for the value of a swept key ({keys})"),
        )
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(bad)? + open;
        let key = &rest[open + 1..close];
        let (_, text) = values.iter().find(|(k, _)| k == key).ok_or_else(bad)?;
        out.push_str(text);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// One sweep point: each swept key with its value as text, and the settings.
type Swept = (Vec<(String, String)>, Settings);

/// The cartesian product of the `[sweep]` keys, first key outermost.
fn sweep_product(sweep: &toml::Table) -> Result<Vec<Swept>, SpecError> {
    let mut points: Vec<Swept> = vec![(Vec::new(), Settings::default())];
    for (key, values) in sweep {
        let values = non_empty_array(key, values, "a non-empty array of values")?;
        if !SWEEP_KEYS.contains(&key.as_str()) {
            return Err(SpecError::unknown(
                "key",
                key.as_str(),
                SWEEP_KEYS.join(", "),
            ));
        }
        let mut next = Vec::with_capacity(points.len() * values.len());
        for (items, s) in &points {
            for v in values {
                let mut s = s.clone();
                s.set(key, v)?;
                let mut items = items.clone();
                items.push((key.clone(), label_text(v)));
                next.push((items, s));
            }
        }
        points = next;
    }
    Ok(points)
}

/// The `[sweep]` points, labelled by `template` or by their values ("vms=32 bs=4k").
fn sweep_points(sweep: &Value, template: Option<&str>) -> Result<Vec<Point>, SpecError> {
    let Value::Table(sweep) = sweep else {
        return Err(SpecError::invalid(
            "sweep",
            sweep.to_string(),
            "a [sweep] table",
        ));
    };
    sweep_product(sweep)
        .map_err(|e| e.context("[sweep]"))?
        .into_iter()
        .map(|(items, settings)| {
            let label = match template {
                Some(t) => render_label(t, &items)?,
                None => {
                    let words: Vec<String> =
                        items.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    words.join(" ")
                }
            };
            Ok(Point {
                label,
                settings,
                groups: None,
            })
        })
        .collect()
}

/// The `[[point]]` tables: each a label, its own settings and optionally the
/// names of the groups it runs.
fn listed_points(v: &Value, group_names: &[&str]) -> Result<Vec<Point>, SpecError> {
    tables("point", v)?
        .into_iter()
        .map(|(ctx, t)| {
            let point = || -> Result<Point, SpecError> {
                let label = string_key(t, "label")?.ok_or_else(|| {
                    SpecError::invalid("label", "(none)", "a string naming the load point")
                })?;
                let allowed = format!(
                    "a non-empty array of group names ({})",
                    group_names.join(", ")
                );
                let groups = match t.get("groups") {
                    None => None,
                    Some(v) => Some(
                        non_empty_array("groups", v, &allowed)?
                            .iter()
                            .map(|n| match n.as_str() {
                                Some(n) if group_names.contains(&n) => Ok(n.to_string()),
                                _ => Err(SpecError::invalid("groups", n.to_string(), &allowed)),
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                };
                let settings = settings_from(t, &[GROUP_KEYS, SPEC_KEYS], POINT_KEYS)?;
                Ok(Point {
                    label,
                    settings,
                    groups,
                })
            };
            point().map_err(|e| e.context(&ctx))
        })
        .collect()
}

/// The job one table in the job-file format describes, validated: a job file
/// is one such table, a catalogue entry another. `default_name` names a table
/// without `name`; `extra` keys are the caller's (allowed here, not read).
pub fn job_from_table(
    table: &toml::Table,
    default_name: &str,
    extra: &[&str],
) -> Result<Job, SpecError> {
    let name = string_key(table, "name")?.unwrap_or_else(|| default_name.to_string());
    let description = string_key(table, "description")?.unwrap_or_default();
    let label = string_key(table, "label")?;
    let keys: Vec<&str> = FILE_KEYS.iter().chain(extra).copied().collect();
    let top = settings_from(table, &[GROUP_KEYS, SPEC_KEYS], &keys)?;

    let groups: Vec<(String, Settings)> = match table.get("group") {
        None => vec![("vm".to_string(), Settings::default())],
        Some(v) => tables("group", v)?
            .into_iter()
            .enumerate()
            .map(|(i, (ctx, t))| {
                let name = string_key(t, "name")
                    .map_err(|e| e.context(&ctx))?
                    .unwrap_or(format!("group{}", i + 1));
                let s = settings_from(t, &[GROUP_KEYS], &["name"]).map_err(|e| e.context(&ctx))?;
                Ok((name, s))
            })
            .collect::<Result<_, SpecError>>()?,
    };

    let points = match (table.get("sweep"), table.get("point")) {
        (Some(_), Some(_)) => {
            return Err(SpecError::invalid(
                "sweep/point",
                "both given",
                "a [sweep] or [[point]] tables, not both",
            ));
        }
        (Some(sweep), None) => sweep_points(sweep, label.as_deref())?,
        (None, Some(listed)) => {
            if let Some(l) = &label {
                return Err(SpecError::invalid(
                    "label",
                    l,
                    "a label in each [[point]] (a top-level label names the single point or the sweep's points)",
                ));
            }
            let names: Vec<&str> = groups.iter().map(|(n, _)| n.as_str()).collect();
            listed_points(listed, &names)?
        }
        (None, None) => vec![Point {
            label: render_label(label.as_deref().unwrap_or(&name), &[])?,
            settings: Settings::default(),
            groups: None,
        }],
    };

    let specs = points
        .iter()
        .map(|point| {
            let mut spec = default_spec(&point.label);
            point.settings.over(&top).apply_spec(&mut spec);
            for (gname, gs) in &groups {
                if point
                    .groups
                    .as_ref()
                    .is_none_or(|only| only.contains(gname))
                {
                    let mut g = default_group(gname);
                    point.settings.over(&gs.over(&top)).apply_group(&mut g);
                    spec.groups.push(g);
                }
            }
            spec
        })
        .collect();
    let job = Job {
        name,
        description,
        profile: None,
        points: specs,
        provenance: Vec::new(),
        curve: match table.get("curve") {
            Some(v) => super::curve::from_toml(v)?,
            None => None,
        },
    };
    validate_job(&job)?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::super::{Access, BlockSizes, Content, Rate, SyncMode};
    use super::*;
    use crate::workload::testing::{assert_has, assert_starts, example_files};
    use std::time::Duration;

    fn err(text: &str) -> String {
        parse(text, "jobs/x.toml").unwrap_err().to_string()
    }

    #[test]
    fn examples_parse() {
        let files = example_files("jobs", "toml");
        for path in &files {
            let job = load(path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!job.points.is_empty());
        }
        assert!(files.len() >= 2);
    }

    #[test]
    fn defaults() {
        let job = parse("", "dir/empty.toml").unwrap();
        assert_eq!(job.name, "empty");
        assert_eq!(job.points.len(), 1);
        let p = &job.points[0];
        assert_eq!(p.label, "empty");
        assert_eq!(p.size, 64 << 20);
        assert_eq!(p.runtime, Duration::from_secs(10));
        assert_eq!(p.seed, DEFAULT_SEED);
        assert_eq!(p.groups, vec![default_group("vm")]);
        assert_eq!(p.groups[0].access.read_pct, 100);
        assert_eq!(p.groups[0].access.random_pct, 100);
    }

    #[test]
    fn single_group_at_top_level() {
        let job = parse(
            r#"
            name = "oltp"
            size = "1GiB"
            runtime = "60s"
            ramp_time = 10
            direct = true
            sync = "dsync"
            content = { compress = 50, dedupe = 20 }
            vms = 2
            numjobs = 4
            disks = 2
            bssplit = "4k/50:8k/50"
            rw = "randrw"
            rwmixread = 60
            iodepth = 32
            rate = "10MiB"
            "#,
            "x.toml",
        )
        .unwrap();
        let p = &job.points[0];
        assert_eq!((p.size, p.direct, p.sync), (1 << 30, true, SyncMode::Dsync));
        assert_eq!(
            (p.ramp, p.runtime),
            (Duration::from_secs(10), Duration::from_secs(60))
        );
        assert_eq!(
            p.content,
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 20
            }
        );
        let g = &p.groups[0];
        assert_eq!((g.vms, g.workers_per_vm, g.disks_per_vm), (2, 4, 2));
        assert_eq!(g.access.bs, BlockSizes(vec![(4096, 50), (8192, 50)]));
        assert_eq!(
            (g.access.read_pct, g.access.random_pct, g.access.iodepth),
            (60, 100, 32)
        );
        assert_eq!(g.access.rate, Some(Rate::Bytes(10 << 20)));
    }

    #[test]
    fn rw_semantics() {
        let g = |extra: &str| {
            parse(extra, "x.toml").unwrap().points[0].groups[0]
                .access
                .clone()
        };
        let rr = |a: Access| (a.read_pct, a.random_pct);
        assert_eq!(rr(g("rw = \"read\"")), (100, 0));
        assert_eq!(rr(g("rw = \"write\"")), (0, 0));
        assert_eq!(rr(g("rw = \"randread\"")), (100, 100));
        assert_eq!(rr(g("rw = \"randwrite\"")), (0, 100));
        assert_eq!(rr(g("rw = \"rw\"")), (50, 0));
        assert_eq!(rr(g("rw = \"readwrite\"\nrwmixread = 70")), (70, 0));
        assert_eq!(rr(g("rw = \"randrw\"")), (50, 100));
        assert_eq!(rr(g("rw = \"randrw\"\npercentage_random = 30")), (50, 30));
        assert_eq!(rr(g("rw = \"write\"\nrwmixread = 70")), (0, 0));
    }

    #[test]
    fn groups_and_sweep() {
        let job = parse(
            r#"
            size = "8MiB"
            bs = "32k"
            [[group]]
            name = "readers"
            vms = 2
            rw = "read"
            [[group]]
            rw = "write"
            [sweep]
            vms = [1, 2]
            bs = ["4k", 8192]
            "#,
            "x.toml",
        )
        .unwrap();
        let labels: Vec<_> = job.points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "vms=1 bs=4k",
                "vms=1 bs=8192",
                "vms=2 bs=4k",
                "vms=2 bs=8192"
            ]
        );
        let p = &job.points[1];
        assert_eq!(p.groups.len(), 2);
        assert_eq!(p.groups[0].name, "readers");
        assert_eq!(p.groups[1].name, "group2");
        assert_eq!(p.groups[0].vms, 1);
        assert_eq!(p.groups[1].access.bs, BlockSizes::one(8192));
        assert_eq!(p.groups[1].access.read_pct, 0);
        // Sweep order follows the file, not the alphabet.
        let job = parse(
            "[sweep]\nrw = [\"read\", \"write\"]\nbs = [\"4k\", \"8k\"]\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(job.points[1].label, "rw=read bs=8k");
    }

    #[test]
    fn io_size_makes_runtime_unbounded() {
        let p = &parse("io_size = \"256MiB\"", "x.toml").unwrap().points[0];
        assert_eq!((p.io_limit, p.runtime), (Some(256 << 20), Duration::ZERO));
        let p = &parse("io_size = \"256MiB\"\nruntime = 5", "x.toml")
            .unwrap()
            .points[0];
        assert_eq!(p.runtime, Duration::from_secs(5));
    }

    #[test]
    fn polling_keys_and_their_json() {
        let p = &parse(
            "direct = true\nsqpoll = true\nsqpoll_cpu = 1\nhipri = 1",
            "x.toml",
        )
        .unwrap()
        .points[0];
        assert_eq!((p.sqpoll, p.sqpoll_cpu, p.hipri), (true, Some(1), true));
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(
            (&json["sqpoll"], &json["sqpoll_cpu"], &json["hipri"]),
            (
                &serde_json::json!(true),
                &serde_json::json!(1),
                &serde_json::json!(true)
            )
        );
        // Off (the default), they are left out of the JSON, as before they existed.
        let p = &parse("", "x.toml").unwrap().points[0];
        let json = serde_json::to_value(p).unwrap();
        for key in ["sqpoll", "sqpoll_cpu", "hipri"] {
            assert!(json.get(key).is_none(), "{key} in {json}");
        }
        let back: crate::workload::Spec = serde_json::from_value(json).unwrap();
        assert_eq!(&back, p);
        let e = err("hipri = true");
        assert!(
            e.contains("invalid hipri = 1") && e.contains("need O_DIRECT"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_file_and_key() {
        let e = err("bsx = 4");
        assert_starts(
            &e,
            "job file jobs/x.toml: unknown key \"bsx\" (allowed: name, description",
        );
        assert_has(&e, "bssplit");
        let e = err("[[group]]\nname = \"a\"\nsize = \"1m\"");
        assert_starts(
            &e,
            "job file jobs/x.toml, [[group]] 1: unknown key \"size\" (allowed: name, vms",
        );
        assert_eq!(
            err("rwmixread = 150"),
            "job file jobs/x.toml: invalid rwmixread = 150 (allowed: 0..=100)"
        );
        // Each text, and a part its error must contain.
        for (text, part) in [
            (
                "[sweep]\nsize = [\"1m\"]",
                "[sweep]: unknown key \"size\" (allowed: vms, numjobs",
            ),
            (
                "[sweep]\nvms = 3",
                "invalid vms = 3 (allowed: a non-empty array",
            ),
            (
                "direct = true\nbs = 1000",
                "invalid bs = 1000 (allowed: 512 B ..= 64 MiB",
            ),
            (
                "rw = \"randomread\"",
                "invalid rw = randomread (allowed: read, write",
            ),
            ("size = \"4q\"", "invalid size = 4q"),
            ("size = \"4q\"", "unknown suffix"),
            ("rate = \"1m\"\nrate_iops = 5", "rate/rate_iops"),
            ("content = { compress = 50, foo = 1 }", "invalid content"),
            (
                "[sweep]\nvms = [32, 0]",
                "load point \"vms=0\": invalid vms = 0",
            ),
            ("name = 3", "invalid name = 3 (allowed: a string)"),
        ] {
            assert_has(&err(text), part);
        }
    }

    #[test]
    fn labels_name_points() {
        let labels = |text: &str| -> Vec<String> {
            let job = parse(text, "x.toml").unwrap_or_else(|e| panic!("{e}"));
            job.points.into_iter().map(|p| p.label).collect()
        };
        assert_eq!(labels("label = \"1 VM\""), ["1 VM"]);
        assert_eq!(
            labels("label = \"{vms} VMs\"\n[sweep]\nvms = [32, 64]"),
            ["32 VMs", "64 VMs"]
        );
        assert_eq!(
            labels("label = \"bs={bs} {rw}\"\n[sweep]\nbs = [\"4k\"]\nrw = [\"write\", \"read\"]"),
            ["bs=4k write", "bs=4k read"]
        );
        assert_eq!(
            err("label = \"{vm} VMs\"\n[sweep]\nvms = [1]"),
            "job file jobs/x.toml: invalid label = {vm} VMs (allowed: text, with {KEY} for the value of a swept key ({vms}))"
        );
        assert_has(
            &err("label = \"{vms\"\n[sweep]\nvms = [1]"),
            "invalid label = {vms (allowed: text, with {KEY}",
        );
        assert_has(&err("label = \"{vms}\""), "swept key (none: no [sweep])");
    }

    #[test]
    fn listed_points_pick_groups_and_values() {
        let job = parse(
            r#"
            size = "8MiB"
            iodepth = 4
            [[group]]
            name = "readers"
            rw = "read"
            [[group]]
            name = "writers"
            rw = "write"
            [[point]]
            label = "reads"
            groups = ["readers"]
            [[point]]
            label = "both, 64k"
            bs = "64k"
            runtime = 5
            "#,
            "x.toml",
        )
        .unwrap();
        let p = &job.points;
        assert_eq!((p[0].label.as_str(), p[0].groups.len()), ("reads", 1));
        assert_eq!(p[0].groups[0].name, "readers");
        assert_eq!(p[0].runtime, Duration::from_secs(10));
        assert_eq!((p[1].label.as_str(), p[1].groups.len()), ("both, 64k", 2));
        assert_eq!(p[1].groups[1].access.bs, BlockSizes::one(64 << 10));
        assert_eq!(p[1].groups[1].access.iodepth, 4);
        assert_eq!(p[1].runtime, Duration::from_secs(5));

        assert_eq!(
            err("[[group]]\nname = \"a\"\n[[point]]\nlabel = \"p\"\ngroups = [\"b\"]"),
            "job file jobs/x.toml, [[point]] 1: invalid groups = \"b\" (allowed: a non-empty array of group names (a))"
        );
        let e = err("[[point]]\nbs = \"4k\"");
        assert!(
            e.ends_with(
                "[[point]] 1: invalid label = (none) (allowed: a string naming the load point)"
            ),
            "{e}"
        );
        let two_points = "[[point]]\nlabel = \"o\"\n[[point]]\nlabel = \"p\"\nvms = 0";
        // Each text, and a part its error must contain.
        for (text, part) in [
            (two_points, "load point \"p\""),
            (two_points, "invalid vms = 0"),
            (
                "[[point]]\nlabel = \"p\"\nname = \"x\"",
                "[[point]] 1: unknown key \"name\" (allowed: label, groups, vms",
            ),
            (
                "[sweep]\nvms = [1]\n[[point]]\nlabel = \"p\"",
                "invalid sweep/point = both given",
            ),
            (
                "label = \"x\"\n[[point]]\nlabel = \"p\"",
                "invalid label = x (allowed: a label in each [[point]]",
            ),
        ] {
            assert_has(&err(text), part);
        }
    }

    #[test]
    fn syntax_error_names_line() {
        let e = err("size = \"1m\"\n\nbs = \n");
        assert_starts(&e, "job file jobs/x.toml, line 3: invalid TOML syntax");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn missing_file() {
        let e = load(Path::new("/nonexistent/j.toml"))
            .unwrap_err()
            .to_string();
        assert_has(&e, "/nonexistent/j.toml");
    }
}
