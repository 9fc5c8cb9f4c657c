//! An Iometer configuration as data: the test setup, the access
//! specifications and the disk workers, read from the file's entries. Every
//! key storlab does not know, a network worker's key (refused as Iometer's,
//! not as unknown), or a value it cannot honour, is an error naming the
//! line; keys that only steer Iometer's GUI or its cycling test types are
//! skipped.

use super::super::validate::SpecError;
use super::lex::Entry;

/// One line of an access specification.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecLine {
    /// Transfer size, bytes.
    pub size: u64,
    /// Share of the specification's I/Os of this line, %.
    pub share: u32,
    /// Reads, %.
    pub reads: u8,
    /// Random, %.
    pub random: u8,
    /// Alignment, bytes (0: sector boundaries).
    pub align: u64,
    /// Transfer delay: the pause before each burst, ms.
    pub delay_ms: u64,
    /// Burst length: I/Os per burst.
    pub burst: u64,
    /// Line in the file.
    pub line: usize,
}

/// A named access specification.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessSpec {
    /// Its name.
    pub name: String,
    /// Line of its name.
    pub line: usize,
    /// Its lines.
    pub lines: Vec<SpecLine>,
}

/// One disk worker.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Worker {
    /// Line of its `'Worker` key.
    pub line: usize,
    /// Outstanding I/Os per target.
    pub oio: u32,
    /// Targets it drives.
    pub targets: u32,
    /// Disk maximum size, sectors (0: the whole disk).
    pub max_sectors: u64,
    /// Starting sector.
    pub start_sector: u64,
    /// Data pattern (0 repeating bytes, 1 pseudo random, 2 full random); `None`: not saved.
    pub pattern: Option<u8>,
    /// Fixed seed, when enabled.
    pub seed: Option<u64>,
    /// Assigned access specifications, in run order, with their lines.
    pub specs: Vec<(String, usize)>,
}

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Test description.
    pub description: String,
    /// Run time per access specification, seconds.
    pub run_s: u64,
    /// Line of the run time.
    pub run_line: usize,
    /// Ramp-up time, seconds.
    pub ramp_s: u64,
    /// Access specifications.
    pub specs: Vec<AccessSpec>,
    /// Disk workers of every manager.
    pub workers: Vec<Worker>,
}

/// Keys that change nothing storlab runs: the GUI's results display, and
/// defaults and cycling that only matter for other test types.
const SKIPPED: &[&str] = &[
    "TEST SETUP",
    "END test setup",
    "Default Disk Workers to Spawn",
    "Default Network Workers to Spawn",
    "Record Results",
    "Worker Cycling",
    "Disk Cycling",
    "Target Cycling",
    "Queue Depth Cycling",
    "ACCESS SPECIFICATIONS",
    "END access specifications",
    "MANAGER LIST",
    "Manager ID, manager name",
    "Manager network address",
    "Default target settings for worker",
    "End default target settings for worker",
    "End assigned access specs",
    "Target assignments",
    "End target assignments",
    "End target",
    "End worker",
    "End manager",
    "END manager list",
];

/// Keys Iometer saves for its network workers and their targets: refused
/// as Iometer's, not as unknown (the worker's `NETWORK` type is refused too).
const NETWORK_KEYS: &[&str] = &[
    "Local network interface",
    "VI outstanding IOs",
    "Target manager ID, manager name",
];

fn num<T: std::str::FromStr>(
    field: &str,
    text: &str,
    allowed: &str,
    at: &str,
) -> Result<T, SpecError> {
    text.trim()
        .parse()
        .map_err(|_| SpecError::invalid(field, text.trim(), allowed).context(at))
}

/// Read the entries into a [`Config`]; every problem, one line each.
pub fn config(entries: &[Entry], origin: &str) -> Result<Config, Vec<SpecError>> {
    let mut c = Config::default();
    let mut errors = Vec::new();
    let mut in_display = false;
    for e in entries {
        let at = format!("{origin}, line {}", e.value_line());
        let key = e.key.as_str();
        if key.starts_with("RESULTS DISPLAY") {
            in_display = true;
            continue;
        }
        if in_display {
            in_display = key != "END results display";
            continue;
        }
        let head = key.split(" =").next().unwrap_or(key).trim();
        let r: Result<(), SpecError> = match head {
            h if SKIPPED.contains(&h) => Ok(()),
            "Test Description" => {
                c.description = e.first().to_string();
                Ok(())
            }
            "Run Time" => {
                let f: Vec<&str> = e.first().split_whitespace().collect();
                let allowed = "hours minutes seconds, e.g. 0 5 0";
                if f.len() == 3 {
                    let h: Result<Vec<u64>, _> = f.iter().map(|x| num("Run Time", x, allowed, &at)).collect();
                    h.and_then(|h| {
                        c.run_s = h[0]
                            .checked_mul(3600)
                            .and_then(|s| s.checked_add(h[1].checked_mul(60)?))
                            .and_then(|s| s.checked_add(h[2]))
                            .ok_or_else(|| {
                                SpecError::invalid("Run Time", e.first(), "a run time below 2^64 seconds")
                                    .context(&at)
                            })?;
                        c.run_line = e.value_line();
                        Ok(())
                    })
                } else {
                    Err(SpecError::invalid("Run Time", e.first(), allowed).context(at))
                }
            }
            "Ramp Up Time (s)" => num("Ramp Up Time (s)", e.first(), "whole seconds", &at).map(|v| c.ramp_s = v),
            "Test Type" if e.first() == "NORMAL" => Ok(()),
            "Test Type" => Err(SpecError::invalid(
                "Test Type",
                e.first(),
                "NORMAL (storlab runs each access specification once; for cycling use a storlab [sweep])",
            )
            .context(at)),
            "Access specification name,default assignment" => {
                let v = e.first();
                let name = v.rsplit_once(',').map_or(v, |(n, _)| n).trim().to_string();
                c.specs.push(AccessSpec { name, line: e.value_line(), lines: Vec::new() });
                Ok(())
            }
            "size,% of size,% reads,% random,delay,burst,align,reply" => spec_lines(e, origin, &mut c),
            "Worker" | "Worker ID, worker name" => {
                c.workers.push(Worker { line: e.line, ..Worker::default() });
                Ok(())
            }
            "Worker type" if e.first() == "DISK" => Ok(()),
            "Worker type" => Err(SpecError::invalid("Worker type", e.first(), "DISK (storlab has no network workers)").context(at)),
            k if k.starts_with("Number of outstanding IOs") || k.starts_with("# of outstanding IOs") => {
                with_worker(&mut c, e, origin, |w| oio(w, e, &at))
            }
            k if k.starts_with("Disk maximum size,starting sector") => {
                with_worker(&mut c, e, origin, |w| disk(w, e, &at))
            }
            "Assigned access specs" => with_worker(&mut c, e, origin, |w| {
                w.specs.extend(e.values.iter().map(|(l, v)| (v.clone(), *l)));
                Ok(())
            }),
            "Access specification name" => with_worker(&mut c, e, origin, |w| {
                w.specs.push((e.first().to_string(), e.value_line()));
                Ok(())
            }),
            "Target" | "Target type,target name" => with_worker(&mut c, e, origin, |w| {
                w.targets += 1;
                Ok(())
            }),
            "Target type" if e.first() == "DISK" => Ok(()),
            "Target type" => Err(SpecError::invalid("Target type", e.first(), "DISK").context(at)),
            k if NETWORK_KEYS.contains(&k) => Err(SpecError::unsupported(
                "Iometer key",
                k,
                "a network worker's setting; storlab runs disk workers only",
            )
            .context(format!("{origin}, line {}", e.line))),
            other => Err(SpecError::unknown("Iometer key", other, "the keys Iometer 1.1 saves for disk workers and NORMAL tests")
                .context(format!("{origin}, line {}", e.line))),
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(c)
    } else {
        Err(errors)
    }
}

/// The worker being read, or an error: the key belongs inside a `'Worker`.
fn with_worker(
    c: &mut Config,
    e: &Entry,
    origin: &str,
    f: impl FnOnce(&mut Worker) -> Result<(), SpecError>,
) -> Result<(), SpecError> {
    match c.workers.last_mut() {
        Some(w) => f(w),
        None => Err(
            SpecError::invalid(&e.key, e.first(), "inside a 'Worker of the 'MANAGER LIST")
                .context(format!("{origin}, line {}", e.line)),
        ),
    }
}

/// `OIO,test connection rate,transactions per connection[,use fixed seed,fixed seed value]`.
fn oio(w: &mut Worker, e: &Entry, at: &str) -> Result<(), SpecError> {
    let f: Vec<&str> = e.first().split(',').map(str::trim).collect();
    w.oio = num("# of outstanding IOs", f[0], "1 or more", at)?;
    if w.oio == 0 {
        return Err(SpecError::invalid("# of outstanding IOs", 0, "1 or more").context(at));
    }
    // Iometer then closes and reopens the target every N transactions:
    // what it measures includes the opens, which storlab's workers never do.
    if f.get(1) == Some(&"ENABLED") {
        return Err(SpecError::unsupported(
            "Iometer setting",
            "test connection rate",
            "Iometer then reopens the target every N transactions and counts the opens; \
             set it to DISABLED",
        )
        .context(at));
    }
    if f.get(3) == Some(&"ENABLED") {
        w.seed = Some(num(
            "fixed seed value",
            f.get(4).unwrap_or(&""),
            "an integer",
            at,
        )?);
    }
    Ok(())
}

/// `maximum size (sectors),starting sector[,data pattern]`.
fn disk(w: &mut Worker, e: &Entry, at: &str) -> Result<(), SpecError> {
    let f: Vec<&str> = e.first().split(',').map(str::trim).collect();
    let sectors = "a number of 512-byte sectors";
    w.max_sectors = num("Disk maximum size", f[0], sectors, at)?;
    w.start_sector = num("starting sector", f.get(1).unwrap_or(&"0"), sectors, at)?;
    for (name, v) in [
        ("Disk maximum size", w.max_sectors),
        ("starting sector", w.start_sector),
    ] {
        if v > u64::MAX / 512 {
            return Err(SpecError::invalid(name, v, "below 2^55 sectors (2^64 bytes)").context(at));
        }
    }
    let patterns = "0 (repeating bytes), 1 (pseudo random), 2 (full random)";
    w.pattern = match f.get(2) {
        None => None,
        Some(p) => match num::<u8>("Data pattern", p, patterns, at)? {
            v @ 0..=2 => Some(v),
            v => return Err(SpecError::invalid("Data pattern", v, patterns).context(at)),
        },
    };
    Ok(())
}

/// The lines of the last access specification.
fn spec_lines(e: &Entry, origin: &str, c: &mut Config) -> Result<(), SpecError> {
    let Some(spec) = c.specs.last_mut() else {
        return Err(SpecError::invalid(
            "access specification line",
            e.first(),
            "below an 'Access specification name",
        )
        .context(format!("{origin}, line {}", e.line)));
    };
    for (line, text) in &e.values {
        let at = format!("{origin}, line {line}");
        let f: Vec<&str> = text.split(',').map(str::trim).collect();
        if f.len() != 8 {
            return Err(SpecError::invalid(
                "access specification line",
                text,
                "8 numbers: size,% of size,% reads,% random,delay,burst,align,reply",
            )
            .context(at));
        }
        let pct = |name: &str, v: &str| -> Result<u8, SpecError> {
            num::<u8>(name, v, "0..=100", &at).and_then(|p| {
                if p <= 100 {
                    Ok(p)
                } else {
                    Err(SpecError::invalid(name, p, "0..=100").context(&at))
                }
            })
        };
        let (delay, burst, reply): (u64, u64, u64) = (
            num("delay", f[4], "0", &at)?,
            num("burst", f[5], "1", &at)?,
            num("reply", f[7], "0", &at)?,
        );
        if reply != 0 {
            return Err(SpecError::invalid(
                "reply",
                reply,
                "0 (a reply size is for network workers)",
            )
            .context(&at));
        }
        if burst == 0 || burst > 1_000_000 {
            return Err(SpecError::invalid("burst", burst, "1..=1000000 I/Os").context(&at));
        }
        if delay > 60_000 {
            return Err(SpecError::invalid("delay", delay, "0..=60000 ms").context(&at));
        }
        spec.lines.push(SpecLine {
            size: num("size", f[0], "bytes, 1 or more", &at)?,
            share: pct("% of size", f[1])? as u32,
            reads: pct("% reads", f[2])?,
            random: pct("% random", f[3])?,
            align: num("align", f[6], "bytes (0: sector boundaries)", &at)?,
            delay_ms: delay,
            burst,
            line: *line,
        });
    }
    Ok(())
}
