//! One fio job's options mapped onto storlab's keys: group keys (the
//! access), per-point keys (region, time, I/O mode) and the target.

use super::super::settings::RwMode;
use super::super::units::parse_size;
use super::super::validate::SpecError;
use super::checked;
use super::ini::{Opt, Section};
use super::steady::SteadyOpts;
use toml::Value;

/// Every option storlab reads, for the error on any other.
pub const SUPPORTED: &str = "name, description, bs, blocksize, bsrange, blocksize_range, bssplit, \
     rw, readwrite, rwmixread, rwmixwrite, percentage_random, iodepth, \
     iodepth_batch_complete_min (iodepth_batch_complete), numjobs, size, io_size, \
     offset, runtime, time_based, ramp_time, direct, buffered, sync, fsync (0), \
     sqthread_poll, sqthread_poll_cpu (io_uring), hipri (io_uring, pvsync2), rate_iops, rate, \
     norandommap, randrepeat (1), randseed, random_distribution (random), invalidate (0), blockalign, filename, \
     directory, ioengine, uri (nbd), nfs_url (nfs), stonewall, wait_for_previous, new_group, \
     group_reporting, thread, steadystate (ss), steadystate_duration (ss_dur), \
     steadystate_ramp_time (ss_ramp)";

/// Engines that keep one I/O in flight whatever `iodepth` says.
const SYNC_ENGINES: &[&str] = &["psync", "sync", "pvsync", "pvsync2", "vsync"];
/// Engines that run on storlab's file backend (io_uring) at `iodepth`.
const ASYNC_ENGINES: &[&str] = &["libaio", "io_uring", "posixaio"];
const ENGINES: &str = "psync, sync, pvsync, pvsync2, vsync (file target, iodepth 1), libaio, \
     io_uring, posixaio (file target), null (null:), nbd (uri=nbd://...), libiscsi \
     (filename=iscsi://...), nfs (nfs_url=nfs://...)";

/// One job's options: the `[global]` ones before it, then its own (a later
/// one wins).
pub struct JobOpts<'a> {
    name: &'a str,
    line: usize,
    opts: Vec<&'a Opt>,
}

impl<'a> JobOpts<'a> {
    /// `section`'s options over `global`.
    pub fn new(section: &'a Section, global: &'a [Opt]) -> Self {
        JobOpts {
            name: &section.name,
            line: section.line,
            opts: global.iter().chain(&section.opts).collect(),
        }
    }
}

/// One fio job in storlab's terms.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// Section name (or `name=`).
    pub name: String,
    /// Line of its section header.
    pub line: usize,
    /// Group keys.
    pub group: Vec<(String, Value)>,
    /// Per-point keys, with the line each came from.
    pub point: Vec<(String, Value, usize)>,
    /// The target and the line that named it.
    pub target: Option<(String, usize)>,
    /// Starts a new load point.
    pub stonewall: bool,
    /// `new_group`'s line, if set.
    pub new_group: Option<usize>,
    /// `description=`.
    pub description: Option<String>,
    /// Where storlab's run differs in detail.
    pub notes: Vec<String>,
}

/// A fio boolean: a bare flag or 1/0/true/false.
fn flag(o: &Opt, at: &str) -> Result<bool, SpecError> {
    match o.value.as_deref().map(str::trim) {
        None | Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(v) => {
            Err(SpecError::invalid(&o.key, v, "1, 0, true, false or the bare flag").context(at))
        }
    }
}

fn unsupported(o: &Opt, why: &str, at: &str) -> SpecError {
    SpecError::invalid(&o.key, o.value.as_deref().unwrap_or("(set)"), why).context(at)
}

/// `bsrange=LO-HI` as the sizes fio draws: multiples of LO up to HI, equally
/// likely (fio rounds a random length down to a multiple of the minimum).
fn bsrange(text: &str, o: &Opt, at: &str) -> Result<String, SpecError> {
    let bad = |why: &str| unsupported(o, why, at);
    if text.contains(',') {
        return Err(bad(
            "one LO-HI range (storlab has no separate read,write ranges)",
        ));
    }
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| bad("LO-HI, e.g. 4k-64k"))?;
    let size = |s: &str| parse_size(s).map_err(|e| bad(&e));
    let (lo, hi) = (size(lo)?, size(hi)?);
    if lo == 0 || hi < lo || hi / lo > 64 {
        return Err(bad(
            "LO-HI with 0 < LO <= HI <= 64 x LO (storlab lists each size of the range)",
        ));
    }
    let parts: Vec<String> = (1..=hi / lo)
        .map(|k| format!("{}/1", super::super::import::size_text(k * lo)))
        .collect();
    Ok(parts.join(":"))
}

/// Map one job; every problem is returned, one line each.
pub fn map_job(job: &JobOpts, origin: &str) -> Result<Mapped, Vec<SpecError>> {
    let mut m = Mapped {
        name: job.name.to_string(),
        line: job.line,
        group: Vec::new(),
        point: Vec::new(),
        target: None,
        stonewall: false,
        new_group: None,
        description: None,
        notes: Vec::new(),
    };
    let mut errors = Vec::new();
    let mut said = read_options(job, origin, &mut m, &mut errors);
    let header = format!("{origin}, line {} (job [{}])", job.line, job.name);
    let (engine_name, engine_line) = said.engine.clone().unwrap_or(("psync".into(), job.line));
    let e = engine_name.as_str();
    m.target = target_of(job, &said, e, engine_line, origin, &header, &mut errors);
    engine_options(&said, e, origin, &mut errors);
    lay_out(job, &mut said, e, &mut m);
    region_and_time(&mut said, origin, &header, &mut m, &mut errors);
    note_differences(&said, &mut m);
    // The last setting of a key wins, as in fio.
    let mut seen = Vec::new();
    for (k, v, l) in said.point.into_iter().rev() {
        if !seen.contains(&k) {
            seen.push(k.clone());
            m.point.push((k, v, l));
        }
    }
    m.point.reverse();
    m.group = said.group;
    if errors.is_empty() {
        Ok(m)
    } else {
        Err(errors)
    }
}

/// The job's target, from its engine `e` (named at `engine_line`): a file
/// (`directory`/`filename`), `null:`, or the URL the engine's option names.
fn target_of(
    job: &JobOpts,
    said: &Said,
    e: &str,
    engine_line: usize,
    origin: &str,
    header: &str,
    errors: &mut Vec<SpecError>,
) -> Option<(String, usize)> {
    let (directory, filename) = (&said.directory, &said.filename);
    if SYNC_ENGINES.contains(&e) || ASYNC_ENGINES.contains(&e) {
        match (directory, filename) {
            (Some((d, l)), Some((f, _))) => {
                Some((format!("file:{}/{f}", d.trim_end_matches('/')), *l))
            }
            (Some((d, l)), None) => Some((format!("file:{d}"), *l)),
            (None, Some((f, l))) => Some((format!("file:{f}"), *l)),
            (None, None) => Some(("file:.".to_string(), job.line)),
        }
    } else if e == "null" {
        Some(("null:".into(), engine_line))
    } else if e == "nbd" || e == "nfs" {
        match &said.uri {
            Some((u, l)) => Some((u.clone(), *l)),
            None => {
                let key = if e == "nbd" { "uri" } else { "nfs_url" };
                errors.push(
                    SpecError::invalid(
                        key,
                        "(none)",
                        format!("the {e} engine's URL, e.g. {e}://HOST/..."),
                    )
                    .context(header),
                );
                None
            }
        }
    } else if e == "libiscsi" {
        match filename {
            Some((f, l)) if f.starts_with("iscsi://") => Some((f.clone(), *l)),
            _ => {
                errors.push(
                    SpecError::invalid(
                        "filename",
                        filename.as_ref().map_or("(none)", |f| f.0.as_str()),
                        "iscsi://HOST/IQN/LUN with ioengine=libiscsi",
                    )
                    .context(header),
                );
                None
            }
        }
    } else {
        errors.push(
            SpecError::invalid("ioengine", e, ENGINES)
                .context(format!("{origin}, line {engine_line}")),
        );
        None
    }
}

/// fio takes `sqthread_poll` and `sqthread_poll_cpu` with the io_uring engine
/// only, and `hipri` with io_uring and pvsync2: with another engine, one
/// error naming the option's line and the engine.
fn engine_options(said: &Said, e: &str, origin: &str, errors: &mut Vec<SpecError>) {
    let checks = [
        (said.poll_line, "sqthread_poll", &["io_uring"][..]),
        (said.hipri_line, "hipri", &["io_uring", "pvsync2"][..]),
    ];
    for (line, option, engines) in checks {
        if let Some(line) = line
            && !engines.contains(&e)
        {
            errors.push(
                SpecError::invalid(
                    option,
                    format!("(set with ioengine={e})"),
                    format!(
                        "ioengine={} only (fio's engine option)",
                        engines.join(" or ")
                    ),
                )
                .context(format!("{origin}, line {line}")),
            );
        }
    }
}

/// The job's clones and depth: a sync engine keeps one I/O in flight; the
/// clones share one file (a file, a device, a protocol target) or get one
/// each (`vms`).
fn lay_out(job: &JobOpts, said: &mut Said, e: &str, m: &mut Mapped) {
    if SYNC_ENGINES.contains(&e) {
        let deeper = said
            .group
            .iter()
            .any(|(k, v)| k == "iodepth" && v.as_integer().is_some_and(|d| d > 1));
        if deeper {
            m.notes.push(format!(
                "job [{}]: fio's {e} engine keeps one I/O in flight whatever iodepth says, so iodepth = 1",
                m.name
            ));
        }
        // One I/O in flight: completions come one at a time.
        said.group
            .retain(|(k, _)| k != "iodepth" && k != "iodepth_batch_complete_min");
        said.group.push(("iodepth".into(), Value::Integer(1)));
    }
    let shared =
        said.filename.is_some() || !(SYNC_ENGINES.contains(&e) || ASYNC_ENGINES.contains(&e));
    let numjobs = Value::Integer(said.numjobs.into());
    if shared {
        said.group.insert(0, ("numjobs".into(), numjobs));
        said.point.push((
            "disk_layout".into(),
            Value::String("shared".into()),
            job.line,
        ));
    } else {
        said.group.insert(0, ("vms".into(), numjobs));
    }
}

/// Region and time: `size`, then `runtime` with time_based, else the bytes
/// each job moves (io_size, default size) stopped early by `runtime`; then
/// the steady-state keys.
fn region_and_time(
    said: &mut Said,
    origin: &str,
    header: &str,
    m: &mut Mapped,
    errors: &mut Vec<SpecError>,
) {
    let mut size_ok = false;
    match &said.size {
        Some((s, l)) => match checked("size", s, &format!("{origin}, line {l}")) {
            Ok(v) => {
                said.point.push(("size".into(), v, *l));
                size_ok = true;
            }
            Err(e) => errors.push(e),
        },
        None => errors.push(
            SpecError::invalid(
                "size",
                "(none)",
                "a size in bytes per job, e.g. size=1g (storlab does not take it from an existing file)",
            )
            .context(header),
        ),
    }
    if said.time_based {
        match &said.runtime {
            Some((r, l)) => match checked("runtime", r, &format!("{origin}, line {l}")) {
                Ok(v) => said.point.push(("runtime".into(), v, *l)),
                Err(e) => errors.push(e),
            },
            None => errors.push(
                SpecError::invalid(
                    "runtime",
                    "(none)",
                    "a duration with time_based (fio would run forever)",
                )
                .context(header),
            ),
        }
    } else if let Some((bytes, l)) = said
        .io_size
        .as_ref()
        .or(said.size.as_ref().filter(|_| size_ok))
    {
        // fio without time_based: each job moves io_size (default size) bytes,
        // stopped early by runtime if given.
        let rt = said
            .runtime
            .as_ref()
            .map_or(("0".to_string(), *l), |r| r.clone());
        for (key, text, line) in [("io_size", bytes, *l), ("runtime", &rt.0, rt.1)] {
            match checked(key, text, &format!("{origin}, line {line}")) {
                Ok(v) => said.point.push((key.into(), v, line)),
                Err(e) => errors.push(e),
            }
        }
    }
    match said
        .steady
        .keys(said.ramp.as_ref(), said.runtime.as_ref(), header)
    {
        Ok(k) => {
            said.point.extend(k.point);
            m.notes.extend(k.note);
        }
        Err(e) => errors.push(e),
    }
}

/// Notes where storlab's run differs from fio's: random offsets drawn
/// independently, and a buffered file job's page cache not dropped.
fn note_differences(said: &Said, m: &mut Mapped) {
    let random = said.group.iter().any(|(k, v)| {
        (k == "rw" && v.as_str().is_some_and(|s| s.starts_with("rand")))
            || (k == "percentage_random" && v.as_integer().is_some_and(|p| p > 0))
    });
    if random && !said.norandommap {
        m.notes.push(
            "storlab draws random offsets independently (fio's norandommap); fio's default \
             random map visits every block once per pass"
                .into(),
        );
    }
    let buffered = said
        .point
        .iter()
        .rev()
        .find(|(k, _, _)| k == "direct")
        .is_none_or(|(_, v, _)| v.as_bool() != Some(true));
    if buffered
        && !said.invalidate_given
        && m.target.as_ref().is_some_and(|t| t.0.starts_with("file:"))
    {
        m.notes.push(
            "fio drops a buffered job's file from the page cache before it starts (invalidate=1); \
             storlab does not (its prepare step may have left the file cached)"
                .into(),
        );
    }
}

/// What a job's options said, before its target, layout, region and time
/// are worked out from them together.
#[derive(Default)]
struct Said {
    numjobs: u32,
    time_based: bool,
    runtime: Option<(String, usize)>,
    size: Option<(String, usize)>,
    io_size: Option<(String, usize)>,
    engine: Option<(String, usize)>,
    filename: Option<(String, usize)>,
    directory: Option<(String, usize)>,
    uri: Option<(String, usize)>,
    norandommap: bool,
    invalidate_given: bool,
    /// The line of the first `sqthread_poll` or `sqthread_poll_cpu`.
    poll_line: Option<usize>,
    /// The line of the first `hipri`.
    hipri_line: Option<usize>,
    ramp: Option<(String, usize)>,
    steady: SteadyOpts,
    group: Vec<(String, Value)>,
    point: Vec<(String, Value, usize)>,
}

/// Read every option of `job` in order (a later one wins): the keys each
/// sets directly go into `m` and the group and point keys; errors, one per
/// option, into `errors`.
fn read_options(job: &JobOpts, origin: &str, m: &mut Mapped, errors: &mut Vec<SpecError>) -> Said {
    let mut said = Said {
        numjobs: 1,
        ..Said::default()
    };
    for o in &job.opts {
        let at = format!("{origin}, line {}", o.line);
        let text = o.value.clone().unwrap_or_default();
        if let Some(r) = said.steady.take(o, &at) {
            if let Err(e) = r {
                errors.push(e);
            }
            continue;
        }
        let mut set_group = |key: &str, text: &str| match checked(key, text, &at) {
            Ok(v) => {
                said.group
                    .retain(|(k, _)| k != key && !(key.starts_with("bs") && k.starts_with("bs")));
                said.group.push((key.to_string(), v));
                Ok(())
            }
            Err(e) => Err(e),
        };
        let r: Result<(), SpecError> = match o.key.as_str() {
            "name" => {
                m.name = text.trim().to_string();
                Ok(())
            }
            "description" => {
                m.description = Some(text.trim().to_string());
                Ok(())
            }
            "bs" | "blocksize" if text.contains(',') => Err(unsupported(
                o,
                "one block size for reads and writes (storlab has no bs=READ,WRITE)",
                &at,
            )),
            "bs" | "blocksize" => set_group("bs", &text),
            "bsrange" | "blocksize_range" => {
                bsrange(&text, o, &at).and_then(|s| set_group("bssplit", &s))
            }
            "bssplit" if text.contains(',') => Err(unsupported(
                o,
                "one mix for reads and writes (storlab has no bssplit=READ,WRITE)",
                &at,
            )),
            "bssplit" => set_group("bssplit", &text),
            "rw" | "readwrite" if text.contains(':') => Err(unsupported(
                o,
                "a mode without :N (storlab has no sequential holes)",
                &at,
            )),
            "rw" | "readwrite" if text.contains("trim") => Err(unsupported(
                o,
                &format!("{} (storlab issues no trims)", RwMode::ALLOWED),
                &at,
            )),
            "rw" | "readwrite" => set_group("rw", &text),
            "rwmixread" => set_group("rwmixread", &text),
            "rwmixwrite" => match super::super::units::parse_pct(&text) {
                Ok(w) => set_group("rwmixread", &(100 - w).to_string()),
                Err(e) => Err(unsupported(o, &e, &at)),
            },
            "percentage_random" if text.contains(',') => {
                Err(unsupported(o, "one share for reads and writes", &at))
            }
            "percentage_random" => set_group("percentage_random", &text),
            "iodepth" => set_group("iodepth", &text),
            "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
                set_group("iodepth_batch_complete_min", &text)
            }
            "numjobs" => checked("numjobs", &text, &at).map(|v| {
                said.numjobs = v.as_integer().unwrap_or(1) as u32;
            }),
            "size" | "offset" if text.contains('%') => Err(unsupported(
                o,
                "a size in bytes (storlab does not size by a share of the file)",
                &at,
            )),
            "size" => {
                said.size = Some((text.clone(), o.line));
                Ok(())
            }
            "io_size" | "io_limit" => {
                said.io_size = Some((text.clone(), o.line));
                Ok(())
            }
            "offset" => {
                checked("offset", &text, &at).map(|v| said.point.push(("offset".into(), v, o.line)))
            }
            "runtime" | "timeout" => {
                said.runtime = Some((text.clone(), o.line));
                Ok(())
            }
            "time_based" => flag(o, &at).map(|b| said.time_based = b),
            "ramp_time" => checked("ramp_time", &text, &at).map(|v| {
                said.ramp = Some((text.clone(), o.line));
                said.point.push(("ramp_time".into(), v, o.line));
            }),
            "direct" | "buffered" => flag(o, &at).map(|b| {
                let direct = if o.key == "direct" { b } else { !b };
                said.point
                    .push(("direct".into(), Value::Boolean(direct), o.line));
            }),
            "sync" => {
                checked("sync", &text, &at).map(|v| said.point.push(("sync".into(), v, o.line)))
            }
            "sqthread_poll" => flag(o, &at).map(|b| {
                said.poll_line.get_or_insert(o.line);
                said.point
                    .push(("sqpoll".into(), Value::Boolean(b), o.line));
            }),
            "sqthread_poll_cpu" => checked("sqpoll_cpu", &text, &at).map(|v| {
                said.poll_line.get_or_insert(o.line);
                said.point.push(("sqpoll_cpu".into(), v, o.line));
            }),
            "hipri" => flag(o, &at).map(|b| {
                said.hipri_line.get_or_insert(o.line);
                said.point.push(("hipri".into(), Value::Boolean(b), o.line));
            }),
            "fsync" | "fdatasync" if text.trim() == "0" => Ok(()),
            "fsync" | "fdatasync" => Err(unsupported(
                o,
                "0 (storlab issues no fsync; sync=1 makes every write durable before it completes)",
                &at,
            )),
            "rate_iops" | "rate" if text.contains(',') => Err(unsupported(
                o,
                "one rate for reads and writes together (storlab has no READ,WRITE rates)",
                &at,
            )),
            "rate_iops" => set_group("rate_iops", &text),
            "rate" => set_group("rate", &text),
            "norandommap" => flag(o, &at).map(|b| said.norandommap = b),
            "randrepeat" => match flag(o, &at) {
                Ok(true) => Ok(()),
                Ok(false) => Err(unsupported(
                    o,
                    "1 (storlab's offsets repeat from run to run; set randseed to change them)",
                    &at,
                )),
                Err(e) => Err(e),
            },
            "randseed" => {
                checked("seed", &text, &at).map(|v| said.point.push(("seed".into(), v, o.line)))
            }
            "random_distribution" if text.trim() == "random" => Ok(()),
            "random_distribution" => Err(unsupported(
                o,
                "random (storlab draws offsets uniformly; no zipf, pareto, normal or zoned)",
                &at,
            )),
            "blockalign" | "ba" if text.contains(',') => {
                Err(unsupported(o, "one alignment for reads and writes", &at))
            }
            "blockalign" | "ba" => set_group("blockalign", &text),
            "filename" if text.contains(':') && !text.contains("://") => Err(unsupported(
                o,
                "one file or device (storlab runs a job on one target)",
                &at,
            )),
            "filename" => {
                said.filename = Some((text.trim().to_string(), o.line));
                Ok(())
            }
            "directory" if text.contains(':') => Err(unsupported(o, "one directory", &at)),
            "directory" => {
                said.directory = Some((text.trim().to_string(), o.line));
                Ok(())
            }
            "uri" | "nfs_url" => {
                said.uri = Some((text.trim().to_string(), o.line));
                Ok(())
            }
            "ioengine" => {
                said.engine = Some((text.trim().to_string(), o.line));
                Ok(())
            }
            "stonewall" | "wait_for_previous" => flag(o, &at).map(|b| m.stonewall = b),
            "new_group" => flag(o, &at).map(|b| m.new_group = b.then_some(o.line)),
            "invalidate" => match flag(o, &at).inspect(|_| said.invalidate_given = true) {
                Ok(false) => Ok(()),
                Ok(true) => Err(unsupported(
                    o,
                    "0 (storlab does not drop the file's page cache before a run)",
                    &at,
                )),
                Err(e) => Err(e),
            },
            // storlab reports the jobs of a point together and its workers are threads.
            "group_reporting" | "thread" => Ok(()),
            other => Err(SpecError::unknown("fio option", other, SUPPORTED).context(at)),
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    said
}
