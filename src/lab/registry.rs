//! Which labs are up on this machine, so any storlab command can tell whether
//! a target URL is one a lab made (and so storlab's to write) or someone else's.
//!
//! `lab up` records its state directory under [`DIR`] in a file named after its
//! slot; `lab down` removes it. A record whose lab is no longer running counts
//! for nothing.

use super::LabState;
use crate::target::Target;
use std::path::{Path, PathBuf};

/// Where the records live.
pub const DIR: &str = "/var/lib/storlab/labs";

fn record(slot: u8) -> PathBuf {
    Path::new(DIR).join(slot.to_string())
}

/// Record that the lab in `state_dir` holds `slot`.
pub fn register(slot: u8, state_dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(DIR).map_err(|e| format!("cannot create {DIR}: {e}"))?;
    let path = record(slot);
    std::fs::write(&path, state_dir.as_os_str().as_encoded_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Forget the lab of `slot` (nothing to forget is fine).
pub fn unregister(slot: u8) {
    let _ = std::fs::remove_file(record(slot));
}

/// The states of every registered lab that is still up.
pub fn running_labs() -> Vec<LabState> {
    let Ok(entries) = std::fs::read_dir(DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|dir| LabState::load(Path::new(dir.trim())).ok().flatten())
        .filter(|s| s.any_running())
        .collect()
}

/// Whether `target` is one of a running lab's targets.
pub fn owned_by_a_lab(target: &Target) -> bool {
    let target = target.storage();
    running_labs()
        .iter()
        .filter_map(|s| s.targets.as_ref())
        .any(|t| {
            t.list()
                .iter()
                .any(|(_, url)| Target::parse(url).is_ok_and(|u| u.storage() == target))
        })
}

/// The network of the running lab that serves any of `targets` (URLs);
/// `None` when no running lab does.
pub fn network_of(targets: &[String]) -> Option<crate::model::Network> {
    lab_of(targets).as_ref().map(LabState::network)
}

/// The running lab that serves any of `targets` (URLs).
pub fn lab_of(targets: &[String]) -> Option<LabState> {
    let wanted: Vec<Target> = targets
        .iter()
        .filter_map(|t| Target::parse(t).ok().map(|t| t.storage()))
        .collect();
    if wanted.is_empty() {
        return None;
    }
    running_labs().into_iter().find(|lab| {
        lab.targets.as_ref().is_some_and(|t| {
            t.list()
                .iter()
                .filter_map(|(_, url)| Target::parse(url).ok())
                .any(|u| wanted.contains(&u.storage()))
        })
    })
}
