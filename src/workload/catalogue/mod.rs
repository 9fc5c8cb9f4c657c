//! Named workloads and suites: the built-in catalogue (every workload and
//! suite of WORKLOADS.md, mapped from the reference studies) and the user's
//! own catalogue files, read by the same parser as job files.
//!
//! The built-in catalogue is data, `builtin.toml` beside this file, embedded in
//! the binary. Every workload has a full profile (the study's own sizes and
//! durations) and a quick one (same block sizes, mixes, outstanding I/Os, load
//! points and groups; seconds and MiBs), and every value the study fixes says
//! where it comes from ([`Provenance`](super::Provenance)): "study 000" when the study states it,
//! "storlab default: study silent (...)" with the reason when it does not,
//! "storlab quick profile (...)" for values the quick profile scales down.
//!
//! # Catalogue files
//!
//! A catalogue file is TOML: optional defaults at the top, then workloads and
//! suites. A `[[workload]]` is a job-file table ([`jobfile`](super::jobfile):
//! the same keys, `[[group]]`s, `[sweep]` or `[[point]]`s, `label`) with a few
//! keys more:
//!
//! ```toml
//! direct = true                   # defaults for every workload of this file (job-file keys)
//! [source]                        # notes for values a workload gives none for, added after its own
//! seed = "storlab default (0x57021ab, so runs repeat)"
//!
//! [[workload]]
//! name = "my-oltp"                # required: letters, digits, - _ .; unique over every catalogue
//! study = "in-house"              # required: where it comes from ("study in-house" in listings)
//! summary = "8k OLTP, 4 VMs"      # required: the listing's line
//! description = "..."             # default: the summary
//! from = "vsphere-oltp-8k"        # start from a workload defined before (built-in, an earlier
//!                                 # file or above); its keys but name, summary, description,
//!                                 # from and only; this workload's keys replace them
//! only = ["1 VM"]                 # keep only these load points (by label), in this order
//! vms = 4
//! size = { full = "200GiB", quick = "4MiB" }   # any value may be given per profile
//! [workload.source]               # where each value comes from, shown by `workloads show`
//! vms = "study in-house: 4 VMs"   # or { full = "...", quick = "..." }
//!
//! [[suite]]
//! name = "mine"
//! summary = "my OLTP, then the vSphere suite's first workload"
//! workloads = ["my-oltp", "vsphere-shared-4k"]
//! ```
//!
//! A `source` key is a field `workloads show` prints (vms, numjobs, disks, bs,
//! rwmixread, percentage_random, iodepth, rate, blockalign, size, offset,
//! ramp_time, runtime, io_size, interval, direct, sync, content, seed); a field
//! without one shows "storlab default". A plain note on a value given per
//! profile reads, in the quick profile, "storlab quick profile (full: VALUE;
//! NOTE)", the full value as `show` prints it (ramp and measured time named
//! together); a note given per profile is used as written.
//!
//! # Where catalogue files come from
//!
//! The built-in catalogue first, then every `*.toml` in `$STORLAB_CATALOGUE_DIR`
//! (set it empty for none) or else in `$XDG_CONFIG_HOME/storlab/catalogue.d`
//! (`~/.config/storlab/catalogue.d`), in name order, then each `--catalogue
//! FILE` in order. A name defined twice, in the built-in catalogue and a user
//! file or in two files, is refused naming both: no catalogue silently
//! replaces another's workload. A file found twice is read once.

mod load;
mod show;

use super::validate::SpecError;
use super::{Job, Profile};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The built-in catalogue's text.
const BUILTIN: &str = include_str!("builtin.toml");

/// A named workload: one job per profile.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Name used on the command line.
    pub name: String,
    /// Reference study it comes from ("000" .. "004", or a user's own).
    pub study: String,
    /// One line of description, for the listing.
    pub summary: String,
    /// The catalogue file it is defined in; `None`: the built-in catalogue.
    pub origin: Option<PathBuf>,
    /// Its keys as resolved (for workloads that start `from` it).
    table: toml::Table,
    full: Job,
    quick: Job,
}

impl Entry {
    /// The job for `profile`, validated.
    pub fn build(&self, profile: Profile) -> Job {
        match profile {
            Profile::Full => self.full.clone(),
            Profile::Quick => self.quick.clone(),
        }
    }
}

/// A named sequence of workloads run one after another.
#[derive(Clone, Debug)]
pub struct Suite {
    /// Name used on the command line.
    pub name: String,
    /// One line of description.
    pub summary: String,
    /// Workload names, in run order.
    pub workloads: Vec<String>,
    /// The catalogue file it is defined in; `None`: the built-in catalogue.
    pub origin: Option<PathBuf>,
}

/// Workloads and suites by name: the built-in ones, then the user's.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    entries: Vec<Entry>,
    suites: Vec<Suite>,
    /// The files read, canonical, so one found twice is read once.
    files: Vec<PathBuf>,
}

impl Catalogue {
    /// The built-in catalogue, read once.
    pub fn builtin() -> &'static Catalogue {
        static BUILT_IN: OnceLock<Catalogue> = OnceLock::new();
        BUILT_IN.get_or_init(|| {
            let mut cat = Catalogue::default();
            // The embedded text is checked by the tests; failing here is a build defect.
            load::load(&mut cat, BUILTIN, None)
                .unwrap_or_else(|e| panic!("the built-in catalogue is invalid: {e}"));
            cat
        })
    }

    /// The built-in catalogue with `files` added, in order.
    pub fn with_files(files: &[PathBuf]) -> Result<Catalogue, SpecError> {
        let mut cat = Catalogue::builtin().clone();
        for path in files {
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            if cat.files.contains(&canonical) {
                continue;
            }
            let text = super::jobfile::read_text(path, "catalogue")?;
            load::load(&mut cat, &text, Some(path))?;
            cat.files.push(canonical);
        }
        Ok(cat)
    }

    /// The catalogue a command sees: the built-in one, the user's catalogue
    /// directory ([`user_files`]), then `extra` (`--catalogue FILE`s).
    pub fn user(extra: &[PathBuf]) -> Result<Catalogue, SpecError> {
        let mut files = user_files()?;
        files.extend_from_slice(extra);
        Catalogue::with_files(&files)
    }

    /// Every workload, built-in first, each file's in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Every suite, in the same order.
    pub fn suites(&self) -> &[Suite] {
        &self.suites
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    fn suite(&self, name: &str) -> Option<&Suite> {
        self.suites.iter().find(|s| s.name == name)
    }

    fn unknown(&self, name: &str) -> SpecError {
        let names: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
        let suites: Vec<&str> = self.suites.iter().map(|s| s.name.as_str()).collect();
        SpecError::unknown(
            "workload",
            name,
            format!("{}; suites: {}", names.join(", "), suites.join(", ")),
        )
    }

    /// The workload `name`, validated.
    pub fn get(&self, name: &str, profile: Profile) -> Result<Job, SpecError> {
        match (self.entry(name), self.suite(name)) {
            (Some(e), _) => Ok(e.build(profile)),
            (None, Some(s)) => Err(SpecError::invalid(
                "workload",
                name,
                format!(
                    "a single workload; {name} is a suite of {}",
                    s.workloads.join(", ")
                ),
            )),
            (None, None) => Err(self.unknown(name)),
        }
    }

    /// A workload as one job, or a suite as its jobs in order.
    pub fn resolve(&self, name: &str, profile: Profile) -> Result<Vec<Job>, SpecError> {
        match self.suite(name) {
            Some(s) => s.workloads.iter().map(|w| self.get(w, profile)).collect(),
            None => self.get(name, profile).map(|j| vec![j]),
        }
    }
}

/// The user's catalogue files: every `*.toml` in `$STORLAB_CATALOGUE_DIR`
/// (empty: none), else in `$XDG_CONFIG_HOME/storlab/catalogue.d` or
/// `~/.config/storlab/catalogue.d` if it exists, in name order.
pub fn user_files() -> Result<Vec<PathBuf>, SpecError> {
    let nonempty = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    let (dir, var) = match std::env::var_os("STORLAB_CATALOGUE_DIR") {
        Some(d) if d.is_empty() => return Ok(Vec::new()),
        Some(d) => (PathBuf::from(d), Some("STORLAB_CATALOGUE_DIR")),
        None => match nonempty("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| nonempty("HOME").map(|h| Path::new(&h).join(".config")))
        {
            Some(config) => (config.join("storlab/catalogue.d"), None),
            None => return Ok(Vec::new()),
        },
    };
    let bad = |e: std::io::Error| {
        SpecError::invalid(
            var.unwrap_or("catalogue directory"),
            format!("{} ({e})", dir.display()),
            "a readable directory of catalogue .toml files (STORLAB_CATALOGUE_DIR empty: none)",
        )
    };
    let listing = match std::fs::read_dir(&dir) {
        Err(e) if var.is_none() && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        other => other.map_err(bad)?,
    };
    let mut files = Vec::new();
    for item in listing {
        let path = item.map_err(bad)?.path();
        if path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Every built-in workload, in catalogue order.
pub fn entries() -> &'static [Entry] {
    Catalogue::builtin().entries()
}

/// Every built-in suite.
pub fn suites() -> &'static [Suite] {
    Catalogue::builtin().suites()
}

/// The built-in workload `name`, validated.
pub fn get(name: &str, profile: Profile) -> Result<Job, SpecError> {
    Catalogue::builtin().get(name, profile)
}

/// A built-in workload as one job, or a built-in suite as its jobs in order.
pub fn resolve(name: &str, profile: Profile) -> Result<Vec<Job>, SpecError> {
    Catalogue::builtin().resolve(name, profile)
}

/// The built-in catalogue's `storlab workloads` listing.
pub fn list_text() -> String {
    Catalogue::builtin().list_text()
}

/// The built-in catalogue's `storlab workloads show NAME` text.
pub fn show_text(name: &str, profile: Profile) -> Result<String, SpecError> {
    Catalogue::builtin().show_text(name, profile)
}

#[cfg(test)]
mod tests;
