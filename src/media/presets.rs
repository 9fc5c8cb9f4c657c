//! Named media: the presets built into the binary (`presets.toml`, each
//! figure with its source), the user's own preset file (`--media-file`, the
//! same format), and `fixed:...`. [`resolve`] turns a name into a medium;
//! every bad value is refused naming the file, the preset, the key and the
//! allowed range.

use super::Medium;
use super::fixed::FixedDelay;
use super::model::{Devices, LogDevice, Model, Params, Prediction, Readahead, Workload};
use std::path::Path;
use std::sync::Arc;

/// The lab's default medium: the studies' kind of array.
pub const DEFAULT_MEDIA: &str = "array-15k";

/// The built-in presets.
const BUILTIN: &str = include_str!("presets.toml");

/// What else `--media` takes besides the presets' names.
pub const FIXED_ALLOWED: &str = "fixed:US or fixed:READ_US,WRITE_US[,FLUSH_US]";

/// What a preset is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// No device: [`super::Ram`].
    Ram,
    /// The model with these figures.
    Model(Params),
}

/// One preset as read from a preset file.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Its name (the TOML table's).
    pub name: String,
    /// One sentence on what it emulates.
    pub description: String,
    /// What it is.
    pub kind: Kind,
}

/// The built-in presets, then those of `file`.
pub fn load(file: Option<&Path>) -> Result<Vec<Preset>, String> {
    let mut all = parse(BUILTIN, "built-in presets")?;
    if let Some(f) = file {
        let label = format!("media file {}", f.display());
        let text = std::fs::read_to_string(f).map_err(|e| format!("{label}: {e}"))?;
        for p in parse(&text, &label)? {
            if all.iter().any(|b| b.name == p.name) {
                return Err(format!(
                    "{label}: preset {}: already a built-in preset (choose another name)",
                    p.name
                ));
            }
            all.push(p);
        }
    }
    Ok(all)
}

/// The medium named `name`: a preset (built in or from `file`), or
/// `fixed:...` ([`FixedDelay`]).
pub fn resolve(name: &str, file: Option<&Path>) -> Result<Arc<dyn Medium>, String> {
    if let Some(rest) = name.strip_prefix("fixed:") {
        return Ok(Arc::new(FixedDelay::parse(rest)?));
    }
    match find(name, file)?.kind {
        Kind::Ram => Ok(Arc::new(super::Ram)),
        Kind::Model(p) => Ok(Arc::new(Model::new(name, p))),
    }
}

/// The presets' names, built-in first (only the built-in ones when `file`
/// cannot be read; [`resolve`] says why).
pub fn preset_names(file: Option<&Path>) -> Vec<String> {
    load(file)
        .or_else(|_| load(None))
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.name)
        .collect()
}

/// One line on the medium `name`, for `lab status` and listings.
pub fn describe(name: &str, file: Option<&Path>) -> Result<String, String> {
    if name.starts_with("fixed:") {
        let m = resolve(name, file)?;
        return Ok(format!(
            "{}: fixed delays (µs: read, write, flush)",
            m.name()
        ));
    }
    let p = find(name, file)?;
    Ok(format!("{}: {}", p.name, p.description))
}

/// What the model predicts for preset `name` under `w` (an error for a
/// preset with no device to model, such as `ram`).
pub fn predict(name: &str, file: Option<&Path>, w: &Workload) -> Result<Prediction, String> {
    match find(name, file)?.kind {
        Kind::Model(p) => super::model::predict(&p, w)
            .ok_or_else(|| format!("media {name:?}: nothing to predict for an empty workload")),
        Kind::Ram => Err(format!("media {name:?}: no device to model")),
    }
}

/// The preset `name`, or one line naming it and the allowed names.
fn find(name: &str, file: Option<&Path>) -> Result<Preset, String> {
    let all = load(file)?;
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    let msg = format!(
        "media {name:?}: unknown preset (allowed: {}, {FIXED_ALLOWED})",
        names.join(", ")
    );
    all.into_iter().find(|p| p.name == name).ok_or(msg)
}

/// Every preset in `text`; `label` names the file in errors.
pub fn parse(text: &str, label: &str) -> Result<Vec<Preset>, String> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| format!(" (line {})", text[..s.start].lines().count().max(1)))
            .unwrap_or_default();
        format!("{label}: {}{line}", e.message().trim())
    })?;
    doc.iter()
        .map(|(name, v)| {
            let t = v.as_table().ok_or_else(|| {
                format!("{label}: {name}: must be a table ([{name}]) of the preset's keys")
            })?;
            if name.contains(':') || name.is_empty() {
                return Err(format!(
                    "{label}: preset {name:?}: a name has no ':' (fixed: is taken)"
                ));
            }
            Keys { label, name, t }.preset()
        })
        .collect()
}

/// One preset's table, read key by key.
struct Keys<'a> {
    label: &'a str,
    name: &'a str,
    t: &'a toml::Table,
}

/// Keys every model preset may have, then those of each kind.
const COMMON: &[&str] = &[
    "description",
    "kind",
    "source",
    "devices",
    "stripe_kb",
    "transfer_mb_s",
    "bus_mb_s",
    "cache_us",
    "read_cache_mb",
    "write_cache_mb",
    "destage_mb_s",
    "record_kb",
    "nvram",
    "log_us",
    "log_mb_s",
    "pool_log",
    "txg_s",
    "full_cache",
    "readahead_streams",
    "readahead_kb",
    "readahead_chunk_kb",
    "readahead_reap_ms",
];

/// The read-ahead's keys: all of them or none.
const READAHEAD: [&str; 4] = [
    "readahead_streams",
    "readahead_kb",
    "readahead_chunk_kb",
    "readahead_reap_ms",
];
const SPINDLE: &[&str] = &["seek_ms", "rpm"];
const FLASH: &[&str] = &["read_us", "write_us"];
const KINDS: &str = "spindle, flash, ram";

impl Keys<'_> {
    fn err(&self, key: &str, what: &str) -> String {
        format!("{}: preset {}: {key}{what}", self.label, self.name)
    }

    /// A number in `[min, max]` (`unit` for the message).
    fn num(&self, key: &str, min: f64, max: f64, unit: &str) -> Result<f64, String> {
        self.opt(key, min, max, unit)?
            .ok_or_else(|| self.err(key, &format!(" missing (allowed {min} to {max} {unit})")))
    }

    /// [`Keys::num`] for a key that may be left out.
    fn opt(&self, key: &str, min: f64, max: f64, unit: &str) -> Result<Option<f64>, String> {
        let range = format!("(allowed {min} to {max} {unit})");
        let v = match self.t.get(key) {
            None => return Ok(None),
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => {
                return Err(self.err(key, &format!(" = {other}: not a number {range}")));
            }
        };
        if !(min..=max).contains(&v) {
            return Err(self.err(key, &format!(" = {v}: out of range {range}")));
        }
        Ok(Some(v))
    }

    /// A whole number in `[min, max]`.
    fn whole(&self, key: &str, min: f64, max: f64) -> Result<usize, String> {
        let v = self.num(key, min, max, key)?;
        if v.fract() != 0.0 {
            return Err(self.err(key, &format!(" = {v}: a whole number from {min} to {max}")));
        }
        Ok(v as usize)
    }

    fn text(&self, key: &str, allowed: &str) -> Result<&str, String> {
        match self.t.get(key) {
            Some(toml::Value::String(s)) => Ok(s),
            Some(v) => Err(self.err(key, &format!(" = {v}: must be a string ({allowed})"))),
            None => Err(self.err(key, &format!(" missing ({allowed})"))),
        }
    }

    fn preset(&self) -> Result<Preset, String> {
        let kind = self.text("kind", KINDS)?;
        let description = self.text("description", "one sentence")?.to_string();
        let extra = match kind {
            "spindle" => SPINDLE,
            "flash" => FLASH,
            "ram" => &[][..],
            other => return Err(self.err("kind", &format!(" = {other:?}: allowed {KINDS}"))),
        };
        let allowed: Vec<&str> = match kind {
            "ram" => vec!["description", "kind", "source"],
            _ => COMMON.iter().chain(extra).copied().collect(),
        };
        if let Some(k) = self.t.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(self.err(
                k,
                &format!(
                    ": unknown key for kind {kind} (allowed: {})",
                    allowed.join(", ")
                ),
            ));
        }
        let kind = match kind {
            "ram" => Kind::Ram,
            _ => Kind::Model(self.params(kind == "spindle")?),
        };
        Ok(Preset {
            name: self.name.to_string(),
            description,
            kind,
        })
    }

    fn params(&self, spindle: bool) -> Result<Params, String> {
        let mb_s = |key| self.num(key, 0.001, 1e6, "MB/s").map(|v| v * 1e6 / 1e9);
        let devices = if spindle {
            Devices::Spindle {
                seek_ns: self.num("seek_ms", 0.0, 100.0, "ms")? * 1e6,
                revolution_ns: 60e9 / self.num("rpm", 1000.0, 30000.0, "rpm")?,
            }
        } else {
            Devices::Flash {
                read_ns: self.num("read_us", 0.0, 1e6, "µs")? * 1e3,
                write_ns: self.num("write_us", 0.0, 1e6, "µs")? * 1e3,
            }
        };
        let log = match (self.t.get("log_us"), self.t.get("log_mb_s")) {
            (None, None) => None,
            _ => Some(LogDevice {
                latency_ns: self.num("log_us", 0.0, 1e6, "µs")? * 1e3,
                rate: mb_s("log_mb_s")?,
            }),
        };
        let nvram = match self.t.get("nvram") {
            Some(toml::Value::Boolean(b)) => *b,
            Some(v) => return Err(self.err("nvram", &format!(" = {v}: allowed true, false"))),
            None => return Err(self.err("nvram", " missing (allowed true, false)")),
        };
        let pool_log = match self.t.get("pool_log") {
            None | Some(toml::Value::Boolean(false)) => false,
            Some(toml::Value::Boolean(true)) if log.is_some() => {
                return Err(self.err(
                    "pool_log",
                    " = true: this preset has a log device (log_us, log_mb_s), which takes the \
                     log; leave pool_log out or set it to false",
                ));
            }
            Some(toml::Value::Boolean(true)) => true,
            Some(v) => {
                return Err(self.err("pool_log", &format!(" = {v}: allowed true, false")));
            }
        };
        let txg_ns = match self.opt("txg_s", 0.1, 3600.0, "s")? {
            Some(_) if !pool_log => {
                return Err(self.err(
                    "txg_s",
                    ": only with pool_log = true (transaction groups stall the log's commits \
                     on the pool)",
                ));
            }
            v => v.map(|s| s * 1e9),
        };
        let full_blocks = match self.t.get("full_cache") {
            None => false,
            Some(toml::Value::String(v)) if v == "paced" => false,
            Some(toml::Value::String(v)) if v == "blocks" => true,
            Some(v) => {
                return Err(self.err(
                    "full_cache",
                    &format!(" = {v}: allowed \"paced\", \"blocks\""),
                ));
            }
        };
        let mib = |key| {
            self.num(key, 0.0, 1e7, "MiB")
                .map(|v| (v * 1048576.0) as u64)
        };
        let write_cache = mib("write_cache_mb")?;
        // Without a write-back cache nothing is destaged: the rate may be
        // left out, and a record has nothing to count.
        let destage = match (write_cache, self.t.get("destage_mb_s")) {
            (0, None) => f64::INFINITY,
            _ => mb_s("destage_mb_s")?,
        };
        let record = self
            .opt("record_kb", 0.5, 1048576.0, "KiB")?
            .map(|kb| (kb * 1024.0) as u64);
        if record.is_some() && write_cache == 0 {
            return Err(self.err(
                "record_kb",
                ": only with a write-back cache (write_cache_mb above 0): it sets what a \
                 random write costs the destage",
            ));
        }
        let readahead = self.readahead()?;
        Ok(Params {
            devices,
            count: self.whole("devices", 1.0, 1024.0)?,
            stripe: (self.num("stripe_kb", 0.5, 1048576.0, "KiB")? * 1024.0) as u64,
            transfer: mb_s("transfer_mb_s")?,
            bus: self
                .opt("bus_mb_s", 0.001, 1e6, "MB/s")?
                .map(|v| v * 1e6 / 1e9),
            cache_ns: self.num("cache_us", 0.0, 1e6, "µs")? * 1e3,
            read_cache: mib("read_cache_mb")?,
            write_cache,
            destage,
            record,
            nvram,
            log,
            pool_log,
            txg_ns,
            full_blocks,
            readahead,
        })
    }

    /// The read-ahead's three keys, or `None` when none is given.
    fn readahead(&self) -> Result<Option<Readahead>, String> {
        let given: Vec<&str> = READAHEAD
            .iter()
            .copied()
            .filter(|k| self.t.contains_key(*k))
            .collect();
        if given.is_empty() {
            return Ok(None);
        }
        if let Some(missing) = READAHEAD.iter().find(|k| !given.contains(k)) {
            return Err(self.err(
                missing,
                &format!(
                    " missing: the read-ahead takes all of {} (given: {})",
                    READAHEAD.join(", "),
                    given.join(", ")
                ),
            ));
        }
        let kib = |key| {
            self.num(key, 4.0, 1048576.0, "KiB")
                .map(|kb| (kb * 1024.0) as u64)
        };
        let distance = kib("readahead_kb")?;
        let chunk = kib("readahead_chunk_kb")?;
        if chunk > distance {
            return Err(self.err(
                "readahead_chunk_kb",
                &format!(
                    " = {}: more than readahead_kb = {} (one read-ahead read fits in the \
                     distance it fetches ahead)",
                    chunk / 1024,
                    distance / 1024
                ),
            ));
        }
        Ok(Some(Readahead {
            streams: self.whole("readahead_streams", 1.0, 1024.0)?,
            distance,
            chunk,
            reap_ns: self.num("readahead_reap_ms", 0.0, 3_600_000.0, "ms")? * 1e6,
        }))
    }
}

#[cfg(test)]
mod tests;
