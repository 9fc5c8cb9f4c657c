//! The block baseline (the Fibre Channel role): a loop device over the store
//! file in the media mount, attached with direct I/O (`losetup --direct-io=on`)
//! so every I/O reaches the media server as the servers' I/O does, with no
//! page cache of its own. Runs reach it as `file:/dev/loopN` (no cap) or
//! `file:/dev/loopN?fc=8gfc` (capped at an FC link, [`crate::backends::fc`]).
//!
//! A loop device is recorded by name once attached; [`detach_all`] also finds
//! any loop device over the store file by its backing file, so one attached
//! just before a crash is not left behind, and a recorded name that another
//! file took since (after a reboot) is left alone.

use super::tools::Tools;
use crate::process;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A loop device the lab attached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopDev {
    /// `/dev/loopN`.
    pub name: String,
    /// Whether it runs with direct I/O.
    pub direct_io: bool,
    /// Why direct I/O is off, when it is.
    #[serde(default)]
    pub note: Option<String>,
}

/// `/sys/block/loopN/loop/FILE` of device `name`, trimmed.
fn sys(name: &str, file: &str) -> Option<String> {
    let dev = Path::new(name).file_name()?.to_str()?;
    std::fs::read_to_string(format!("/sys/block/{dev}/loop/{file}"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether loop device `name` is attached to `path`.
fn backed_by(name: &str, path: &Path) -> bool {
    sys(name, "backing_file").is_some_and(|b| {
        let b = b.strip_suffix(" (deleted)").unwrap_or(&b);
        Path::new(b) == path
    })
}

/// Attach a loop device over `path` with direct I/O; if the kernel refuses
/// direct I/O there, without it, and say so in [`LoopDev::note`].
pub fn attach(tools: &Tools, path: &Path) -> Result<LoopDev, String> {
    let p = path.display().to_string();
    let run = |dio: &str| {
        process::run(&tools.losetup, &[dio, "--find", "--show", &p]).map(|o| o.trim().to_string())
    };
    let (name, note) = match run("--direct-io=on") {
        Ok(name) => (name, None),
        Err(e) => (
            run("--direct-io=off")?,
            Some(format!(
                "direct I/O refused ({e}): the loop device reads through its page cache"
            )),
        ),
    };
    if !name.starts_with("/dev/loop") || !backed_by(&name, path) {
        return Err(format!(
            "losetup printed {name:?}, which is not a loop device over {p}"
        ));
    }
    let direct_io = sys(&name, "dio").as_deref() == Some("1");
    let note = match (direct_io, note) {
        (true, _) => None,
        (false, Some(n)) => Some(n),
        (false, None) => Some("the kernel did not turn direct I/O on".into()),
    };
    Ok(LoopDev {
        name,
        direct_io,
        note,
    })
}

/// Every loop device over `path`.
fn over(path: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("loop"))
        .map(|n| format!("/dev/{n}"))
        .filter(|n| backed_by(n, path))
        .collect()
}

/// Detach the recorded loop device and any other over the media layer's store
/// file `store`. Returns what could not be detached.
pub fn detach_all(store: &Path, recorded: Option<&LoopDev>) -> Vec<String> {
    let mut names = over(store);
    if let Some(l) = recorded
        && backed_by(&l.name, store)
        && !names.contains(&l.name)
    {
        names.push(l.name.clone());
    }
    let losetup = Tools::teardown("losetup");
    names
        .iter()
        .filter_map(|n| process::run(&losetup, &["--detach", n]).err())
        .collect()
}

/// The block baseline's target URL, and the URL capped at FC link `link`.
pub fn url(dev: &LoopDev, link: Option<&str>) -> String {
    match link {
        None => format!("file:{}", dev.name),
        Some(l) => format!("file:{}?fc={l}", dev.name),
    }
}
