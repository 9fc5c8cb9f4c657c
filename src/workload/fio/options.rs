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
     iodepth_batch_complete_min (iodepth_batch_complete), iodepth_batch_submit \
     (iodepth_batch), numjobs, size, io_size, \
     offset, runtime, time_based, ramp_time, direct, buffered, sync, fsync (0), \
     sqthread_poll, sqthread_poll_cpu (io_uring), hipri (io_uring), fixedbufs (1), \
     registerfiles (1), rate_iops, rate, \
     norandommap, randrepeat (1), randseed, random_distribution, thinktime, thinktime_blocks, thinktime_spin, invalidate (0), blockalign, filename, \
     directory, ioengine, uri (nbd), nfs_url (nfs), stonewall, wait_for_previous, new_group, \
     group_reporting, thread, steadystate (ss), steadystate_duration (ss_dur), \
     steadystate_ramp_time (ss_ramp)";

/// Engines that keep one I/O in flight whatever `iodepth` says: storlab's
/// psync engine (`ioengine = "psync"`) at iodepth 1.
const SYNC_ENGINES: &[&str] = &["psync", "sync", "pvsync", "pvsync2", "vsync"];
/// Engines that run on storlab's io_uring engine at `iodepth`.
const ASYNC_ENGINES: &[&str] = &["libaio", "io_uring", "posixaio"];
const ENGINES: &str = "psync, sync, pvsync, pvsync2, vsync (file target, storlab's psync, \
     iodepth 1), libaio, io_uring, posixaio (file target, storlab's io_uring), null (null:), \
     nbd (uri=nbd://...), libiscsi (filename=iscsi://...), nfs (nfs_url=nfs://...)";

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

/// The job's engine, clones and depth: a file engine is storlab's psync
/// (a sync engine, one I/O in flight) or io_uring; the clones share one file
/// (a file, a device, a protocol target) or get one each (`vms`).
fn lay_out(job: &JobOpts, said: &mut Said, e: &str, m: &mut Mapped) {
    let line = said.engine.as_ref().map_or(job.line, |(_, l)| *l);
    for (engines, ours) in [(SYNC_ENGINES, "psync"), (ASYNC_ENGINES, "io_uring")] {
        if engines.contains(&e) {
            said.point
                .push(("ioengine".into(), Value::String(ours.into()), line));
        }
    }
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
        said.group.retain(|(k, _)| {
            ![
                "iodepth",
                "iodepth_batch_complete_min",
                "iodepth_batch_submit",
            ]
            .contains(&k.as_str())
        });
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
    ramp: Option<(String, usize)>,
    steady: SteadyOpts,
    group: Vec<(String, Value)>,
    point: Vec<(String, Value, usize)>,
    /// The line of the first `sqthread_poll` or `sqthread_poll_cpu`.
    poll_line: Option<usize>,
    /// The line of the first `hipri`.
    hipri_line: Option<usize>,
}

/// Read every option of `job` in order (a later one wins): the keys each
/// sets directly go into `m` and the group and point keys; errors, one per
/// option, into `errors`. Each option goes to the first reader of
/// [`READERS`] that knows its key; one none knows is an error saying why
/// (a fio option storlab refuses) or naming the supported ones (a name fio
/// does not have).
fn read_options(job: &JobOpts, origin: &str, m: &mut Mapped, errors: &mut Vec<SpecError>) -> Said {
    let mut said = Said {
        numjobs: 1,
        ..Said::default()
    };
    for o in &job.opts {
        let one = One {
            o,
            text: o.value.clone().unwrap_or_default(),
            at: format!("{origin}, line {}", o.line),
        };
        let r = READERS
            .iter()
            .find_map(|read| read(&one, &mut said, m))
            .unwrap_or_else(|| Err(not_read(&o.key).context(&one.at)));
        if let Err(e) = r {
            errors.push(e);
        }
    }
    said
}

/// The error on an option no reader takes: a fio option storlab refuses,
/// saying why, or a name fio does not have either, listing the supported ones.
fn not_read(key: &str) -> SpecError {
    match super::refused::why(key) {
        Some(why) => SpecError::unsupported("fio option", key, why),
        None => SpecError::unknown("fio option", key, SUPPORTED),
    }
}

/// One option being read: the option, its value (empty for a bare flag)
/// and where it stands, for errors.
struct One<'a> {
    o: &'a Opt,
    text: String,
    at: String,
}

impl One<'_> {
    /// This option's value is one storlab cannot honour: `why` says what it can.
    fn unsupported(&self, why: &str) -> SpecError {
        unsupported(self.o, why, &self.at)
    }

    /// This option as a fio boolean.
    fn flag(&self) -> Result<bool, SpecError> {
        flag(self.o, &self.at)
    }

    /// This option's value as storlab's `key`, checked.
    fn checked(&self, key: &str) -> Result<Value, SpecError> {
        checked(key, &self.text, &self.at)
    }

    /// This option's value, trimmed, with its line.
    fn with_line(&self) -> Option<(String, usize)> {
        Some((self.text.trim().to_string(), self.o.line))
    }
}

/// What reading one option gave: `None` if the reader does not know its
/// key, else whether its value is one storlab can honour.
type Read = Option<Result<(), SpecError>>;

/// fio takes `sqthread_poll` and `sqthread_poll_cpu` with the io_uring engine
/// only, and `hipri` with io_uring and pvsync2; storlab polls with io_uring
/// only (its psync, which runs pvsync2, has no hipri): with another engine,
/// one error naming the option's line and the engine.
fn engine_options(said: &Said, e: &str, origin: &str, errors: &mut Vec<SpecError>) {
    let checks = [
        (said.poll_line, "sqthread_poll", "fio's engine option"),
        (
            said.hipri_line,
            "hipri",
            "storlab polls with io_uring; its psync engine, which runs pvsync2, does not",
        ),
    ];
    for (line, option, why) in checks {
        if let Some(line) = line
            && e != "io_uring"
        {
            errors.push(
                SpecError::invalid(
                    option,
                    format!("(set with ioengine={e})"),
                    format!("ioengine=io_uring only ({why})"),
                )
                .context(format!("{origin}, line {line}")),
            );
        }
    }
}

/// The readers of fio's options, one per area; each knows its own keys.
const READERS: [fn(&One, &mut Said, &mut Mapped) -> Read; 6] = [
    |one, said, _| said.steady.take(one.o, &one.at),
    job_option,
    access_option,
    region_option,
    mode_option,
    target_option,
];

/// The job itself: its name, description, grouping, and the options that
/// change nothing in storlab.
fn job_option(one: &One, _: &mut Said, m: &mut Mapped) -> Read {
    let text = one.text.trim();
    Some(match one.o.key.as_str() {
        "name" => {
            m.name = text.to_string();
            Ok(())
        }
        "description" => {
            m.description = Some(text.to_string());
            Ok(())
        }
        "stonewall" | "wait_for_previous" => one.flag().map(|b| m.stonewall = b),
        "new_group" => one.flag().map(|b| m.new_group = b.then_some(one.o.line)),
        // storlab reports the jobs of a point together and its workers are threads.
        "group_reporting" | "thread" => Ok(()),
        _ => return None,
    })
}

/// The access, storlab's group keys: block sizes, direction and mix,
/// randomness share, depth, rate and alignment.
fn access_option(one: &One, said: &mut Said, _: &mut Mapped) -> Read {
    let text = one.text.as_str();
    let mut set = |key: &str, text: &str| set_group(&mut said.group, key, text, &one.at);
    Some(match one.o.key.as_str() {
        "bs" | "blocksize" if text.contains(',') => {
            Err(one
                .unsupported("one block size for reads and writes (storlab has no bs=READ,WRITE)"))
        }
        "bs" | "blocksize" => set("bs", text),
        "bsrange" | "blocksize_range" => {
            bsrange(text, one.o, &one.at).and_then(|s| set("bssplit", &s))
        }
        "bssplit" if text.contains(',') => {
            Err(one.unsupported("one mix for reads and writes (storlab has no bssplit=READ,WRITE)"))
        }
        "bssplit" => set("bssplit", text),
        "rw" | "readwrite" if text.contains(':') => {
            Err(one.unsupported("a mode without :N (storlab has no sequential holes)"))
        }
        "rw" | "readwrite" if text.contains("trim") => {
            Err(one.unsupported(&format!("{} (storlab issues no trims)", RwMode::ALLOWED)))
        }
        "rw" | "readwrite" => set("rw", text),
        "rwmixread" => set("rwmixread", text),
        "rwmixwrite" => match super::super::units::parse_pct(text) {
            Ok(w) => set("rwmixread", &(100 - w).to_string()),
            Err(e) => Err(one.unsupported(&e)),
        },
        "percentage_random" if text.contains(',') => {
            Err(one.unsupported("one share for reads and writes"))
        }
        "percentage_random" => set("percentage_random", text),
        "thinktime" | "thinktime_blocks" | "thinktime_spin" => set(&one.o.key, text),
        "iodepth" => set("iodepth", text),
        // fio's 0 means "the whole iodepth", which storlab spells as the number.
        "iodepth_batch_submit" | "iodepth_batch" if text.trim() == "0" => {
            Err(one.unsupported("1 or more (fio reads 0 as the iodepth: give that number)"))
        }
        "iodepth_batch_submit" | "iodepth_batch" => set("iodepth_batch_submit", text),
        "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
            set("iodepth_batch_complete_min", text)
        }
        "rate_iops" | "rate" if text.contains(',') => Err(one.unsupported(
            "one rate for reads and writes together (storlab has no READ,WRITE rates)",
        )),
        "rate_iops" => set("rate_iops", text),
        "rate" => set("rate", text),
        "blockalign" | "ba" if text.contains(',') => {
            Err(one.unsupported("one alignment for reads and writes"))
        }
        "blockalign" | "ba" => set("blockalign", text),
        _ => return None,
    })
}

/// Set group key `key` to `text`, checked, replacing an earlier setting
/// (any block size key replaces every other: `bs` and `bssplit` exclude
/// each other).
fn set_group(
    group: &mut Vec<(String, Value)>,
    key: &str,
    text: &str,
    at: &str,
) -> Result<(), SpecError> {
    let v = checked(key, text, at)?;
    group.retain(|(k, _)| k != key && !(key.starts_with("bs") && k.starts_with("bs")));
    group.push((key.to_string(), v));
    Ok(())
}

/// Region and time: clones, size, offset, bytes to move, runtime and ramp
/// (worked out together in [`region_and_time`]).
fn region_option(one: &One, said: &mut Said, _: &mut Mapped) -> Read {
    let (text, line) = (one.text.as_str(), one.o.line);
    let keep = |slot: &mut Option<(String, usize)>| {
        *slot = Some((text.to_string(), line));
        Ok(())
    };
    Some(match one.o.key.as_str() {
        "numjobs" => one.checked("numjobs").map(|v| {
            said.numjobs = v.as_integer().unwrap_or(1) as u32;
        }),
        "size" | "offset" if text.contains('%') => {
            Err(one.unsupported("a size in bytes (storlab does not size by a share of the file)"))
        }
        "size" => keep(&mut said.size),
        "io_size" | "io_limit" => keep(&mut said.io_size),
        "offset" => one
            .checked("offset")
            .map(|v| said.point.push(("offset".into(), v, line))),
        "runtime" | "timeout" => keep(&mut said.runtime),
        "time_based" => one.flag().map(|b| said.time_based = b),
        "ramp_time" => one.checked("ramp_time").map(|v| {
            said.ramp = Some((text.to_string(), line));
            said.point.push(("ramp_time".into(), v, line));
        }),
        _ => return None,
    })
}

/// The I/O mode: direct or buffered, sync, the random offsets, and what
/// storlab cannot do (fsync, other distributions, dropping the page cache).
fn mode_option(one: &One, said: &mut Said, _: &mut Mapped) -> Read {
    let (text, line) = (one.text.trim(), one.o.line);
    Some(match one.o.key.as_str() {
        "direct" | "buffered" => one.flag().map(|b| {
            let direct = if one.o.key == "direct" { b } else { !b };
            said.point
                .push(("direct".into(), Value::Boolean(direct), line));
        }),
        "sync" => one
            .checked("sync")
            .map(|v| said.point.push(("sync".into(), v, line))),
        "sqthread_poll" => one.flag().map(|b| {
            said.poll_line.get_or_insert(line);
            said.point.push(("sqpoll".into(), Value::Boolean(b), line));
        }),
        "sqthread_poll_cpu" => one.checked("sqpoll_cpu").map(|v| {
            said.poll_line.get_or_insert(line);
            said.point.push(("sqpoll_cpu".into(), v, line));
        }),
        "hipri" => one.flag().map(|b| {
            said.hipri_line.get_or_insert(line);
            said.point.push(("hipri".into(), Value::Boolean(b), line));
        }),
        // What storlab's io_uring engine does anyway, where the kernel allows
        // (the run's backend line says "registered files, registered buffers").
        "fixedbufs" | "registerfiles" => match one.flag() {
            Ok(true) => Ok(()),
            Ok(false) => Err(one.unsupported(
                "1 (storlab's io_uring engine always registers its files and buffers where the \
                 kernel allows)",
            )),
            Err(e) => Err(e),
        },
        "fsync" | "fdatasync" if text == "0" => Ok(()),
        "fsync" | "fdatasync" => Err(one.unsupported(
            "0 (storlab issues no fsync; sync=1 makes every write durable before it completes)",
        )),
        "norandommap" => one.flag().map(|b| said.norandommap = b),
        "randrepeat" => match one.flag() {
            Ok(true) => Ok(()),
            Ok(false) => Err(one.unsupported(
                "1 (storlab's offsets repeat from run to run; set randseed to change them)",
            )),
            Err(e) => Err(e),
        },
        "randseed" => one
            .checked("seed")
            .map(|v| said.point.push(("seed".into(), v, line))),
        "random_distribution" => set_group(&mut said.group, "random_distribution", text, &one.at),
        "invalidate" => match one.flag().inspect(|_| said.invalidate_given = true) {
            Ok(false) => Ok(()),
            Ok(true) => {
                Err(one.unsupported("0 (storlab does not drop the file's page cache before a run)"))
            }
            Err(e) => Err(e),
        },
        _ => return None,
    })
}

/// The target: a file or directory, a URL, the engine (worked out together
/// in [`target_of`]).
fn target_option(one: &One, said: &mut Said, _: &mut Mapped) -> Read {
    let text = one.text.as_str();
    Some(match one.o.key.as_str() {
        "filename" if text.contains(':') && !text.contains("://") => {
            Err(one.unsupported("one file or device (storlab runs a job on one target)"))
        }
        "filename" => {
            said.filename = one.with_line();
            Ok(())
        }
        "directory" if text.contains(':') => Err(one.unsupported("one directory")),
        "directory" => {
            said.directory = one.with_line();
            Ok(())
        }
        "uri" | "nfs_url" => {
            said.uri = one.with_line();
            Ok(())
        }
        "ioengine" => {
            said.engine = one.with_line();
            Ok(())
        }
        _ => return None,
    })
}
