//! The lab's media layer: the backing store is served through storlab's FUSE
//! media server ([`crate::media::serve`]), mounted at `STATE_DIR/media`, and
//! every path to the store uses the file in that mount: nfs-ganesha exports
//! the mount, tgt and nbdkit open `media/disk.img`, and the block baseline is
//! a loop device over it ([`super::loopdev`]). Each operation then completes
//! at the emulated medium's times, whichever path it came by.
//!
//! Steps, each recorded in the lab's state before the next, each failure
//! naming its step: the mount point (created, and refused when anything is
//! mounted on it), the media server (spawned, mounts, writes its ready file),
//! the served file (visible in the mount). [`stop`] undoes them by the record:
//! the loop device, then the server by PID, then what is left mounted.

use super::LabError;
pub use super::media_choice::LAB_DEFAULT_MEDIA;
use super::media_choice::MediaChoice;
use super::state::LabState;
pub use super::state::MediaInfo;
use crate::media::fuse::mount;
use crate::media::serve::{self, MediaServer};
pub use crate::media::stats::{MediaShares, MediaStats, StationShare};
use std::path::Path;

/// The mount point's name inside the state directory.
pub const MOUNT_DIR: &str = "media";

/// The media server's log file in the state directory.
pub const LOG: &str = "media.log";

/// A failed step of the media layer, named.
pub fn step_failed(step: &str, message: impl std::fmt::Display) -> LabError {
    LabError::System(format!("media layer: {step} failed: {message}"))
}

/// Whatever is mounted exactly at `mp` (any file system), by its type.
fn mounted_at(mp: &Path) -> Option<String> {
    let mp = mount::normalize(mp);
    mount::mounts()
        .into_iter()
        .find(|m| m.mountpoint == mp)
        .map(|m| m.fstype)
}

/// Start the media layer `choice` over the backing directory `backing_dir`,
/// recording each step in `st`.
pub fn start(
    choice: &MediaChoice,
    backing_dir: &Path,
    st: &mut LabState,
) -> Result<MediaInfo, LabError> {
    let medium = match choice {
        MediaChoice::Emulated(m) => m,
        MediaChoice::None => {
            // The "mount point" is the backing directory itself: nothing served.
            let dir = std::fs::canonicalize(backing_dir).unwrap_or(backing_dir.to_path_buf());
            let info = MediaInfo {
                media: MediaChoice::None,
                mountpoint: dir,
                server: None,
                loop_dev: None,
            };
            st.media = Some(info.clone());
            st.save().map_err(LabError::System)?;
            return Ok(info);
        }
    };
    let mp = st.state_dir.join(MOUNT_DIR);
    std::fs::create_dir_all(&mp).map_err(|e| {
        step_failed(
            "mount point",
            format!("cannot create {}: {e}", mp.display()),
        )
    })?;
    // The kernel names a loop device's backing file by its real path.
    let mp = std::fs::canonicalize(&mp).unwrap_or(mp);
    if let Some(fstype) = mounted_at(&mp) {
        return Err(step_failed(
            "mount point",
            format!(
                "{} is busy: a {fstype} file system is mounted on it (unmount it, or use another --state-dir)",
                mp.display()
            ),
        ));
    }
    let mut info = MediaInfo {
        media: choice.clone(),
        mountpoint: mp.clone(),
        server: None,
        loop_dev: None,
    };
    st.media = Some(info.clone());
    st.save().map_err(LabError::System)?;
    let log = st.state_dir.join(LOG);
    let server = MediaServer::start(
        &backing_dir.join(super::backing::FILE),
        &mp,
        medium.spec(),
        medium.file(),
        &log,
    )
    .map_err(|e| step_failed("media server (mount, then its ready file)", e))?;
    info.server = Some(server.proc);
    st.media = Some(info.clone());
    st.save().map_err(LabError::System)?;
    let store = info.store_path();
    std::fs::metadata(&store).map_err(|e| {
        step_failed(
            "served file",
            format!("{} is not visible in the mount: {e}", store.display()),
        )
    })?;
    Ok(info)
}

impl MediaInfo {
    /// The medium's counters as its media server last published them: the
    /// work of each station (devices, destage, log device, host interface,
    /// transaction groups), read hits and misses, operations and bytes by
    /// kind, the dirty data, and the time they were taken (`at_ns`, on
    /// CLOCK_MONOTONIC; at most [`serve::STATS_INTERVAL`] before the call).
    /// `later.since(&earlier)` turns two into busy shares over the time
    /// between them ([`MediaStats::since`]: busy ns over elapsed ns times
    /// copies), refusing a pair with a reset of the medium in between.
    /// An error says why there are none: no media layer, a medium that
    /// models no device (`fixed:`, `ram`), a server stopped or gone.
    pub fn media_stats(&self) -> Result<MediaStats, String> {
        match &self.server {
            Some(p) => MediaServer::from_proc(p.clone(), &self.mountpoint).stats(),
            None => Err(format!(
                "no media server (--media {}): no medium's statistics",
                self.media.spec()
            )),
        }
    }
}

/// Undo the media layer as recorded: detach the loop device, stop the media
/// server by PID (it unmounts), clean up whatever it left mounted, remove the
/// mount point. Returns what could not be undone.
pub fn stop(info: &MediaInfo, this_boot: bool) -> Vec<String> {
    let mut errors = super::loopdev::detach_all(&info.store_path(), info.loop_dev.as_ref());
    if info.media == MediaChoice::None {
        return errors; // the backing directory is the backing store's to remove
    }
    match info.server.clone().filter(|_| this_boot) {
        Some(p) => {
            if let Err(e) = MediaServer::from_proc(p, &info.mountpoint).stop() {
                errors.push(e);
            }
        }
        None => {
            if let Err(e) = serve::cleanup(&info.mountpoint) {
                errors.push(e);
            }
        }
    }
    // An empty directory only: never what someone else mounted on it.
    match std::fs::remove_dir(&info.mountpoint) {
        Err(e)
            if e.kind() != std::io::ErrorKind::NotFound
                && mounted_at(&info.mountpoint).is_none() =>
        {
            errors.push(format!("cannot remove {}: {e}", info.mountpoint.display()))
        }
        _ => {}
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_without_a_media_server_says_why_it_has_no_statistics() {
        let info = MediaInfo {
            media: MediaChoice::None,
            mountpoint: "/x".into(),
            server: None,
            loop_dev: None,
        };
        let e = info.media_stats().unwrap_err();
        assert!(e.contains("no media server (--media none)"), "{e}");
    }
}
