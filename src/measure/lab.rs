//! The lab a comparison or a study measures on: a temporary lab, taken down
//! whatever happens, and the restore of its store between tests.

use super::session::Session;
use super::{Error, signals};
use crate::compare::Contender;
use crate::lab;
use crate::prepare;

/// A lab for one comparison or study, taken down when dropped (after an
/// error or an interruption too), its state directory removed.
pub struct TemporaryLab {
    /// Its state directory (storlab's own, under the temporary directory).
    pub dir: std::path::PathBuf,
}

impl TemporaryLab {
    /// A fresh state directory for a temporary lab of `what` ("compare").
    pub fn temp_dir(what: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("storlab-{what}-lab-{}", std::process::id()))
    }

    /// Bring up the lab `cfg`, whose state directory is a
    /// [`TemporaryLab::temp_dir`]; Ctrl-C during it takes down what was made.
    pub fn up(cfg: &lab::LabConfig, quiet: bool) -> Result<TemporaryLab, Error> {
        let dir = cfg.state_dir.clone();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::failed(format!("cannot create {}: {e}", dir.display())))?;
        let lab = TemporaryLab { dir };
        signals::install();
        lab::up_until(cfg, &signals::STOP).map_err(|e| match e {
            lab::LabError::BadConfig(_) => Error::input(format!("lab up: {e}")),
            _ => Error::failed(format!("lab up: {e}")),
        })?;
        if !quiet {
            eprintln!("storlab: lab up (state in {})", lab.dir.display());
        }
        Ok(lab)
    }
}

impl Drop for TemporaryLab {
    fn drop(&mut self) {
        match lab::down(&self.dir) {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            Err(e) => eprintln!(
                "storlab: lab down failed: {e} (run `storlab lab down --state-dir {}`)",
                self.dir.display()
            ),
        }
    }
}

/// Reset the lab's backing store to its initial content (the studies' snapshot
/// restore), and its medium to its initial state. The media server says
/// which ranges were written through it since the last restore and only
/// those are rewritten; when it cannot tell (no media layer, passthrough
/// mode, an older server, a change it cannot bound), the whole file is.
pub(super) fn restore(
    c: &Contender,
    s: &mut Session,
    media: Option<&lab::media::MediaInfo>,
) -> Result<(), Error> {
    use crate::media::dirty::Written;
    use crate::workload::units::format_size;
    let Some(path) = &c.backing else {
        return Ok(());
    };
    // A take clears the server's map: until this restore is done, a marker
    // says so, and a restore that finds it (the last one failed or was
    // interrupted after its take) rewrites the whole store.
    let mut marker = path.as_os_str().to_owned();
    marker.push(".restoring");
    let marker = std::path::PathBuf::from(marker);
    let unfinished = marker.exists();
    let marked = std::fs::write(&marker, b"a restore of the backing store is in progress\n");
    // The medium first: the restore writes the backing file itself, beside
    // the media, so the medium's state does not see it.
    let written = match media {
        Some(m) => m
            .reset_taking_written()
            .map_err(|e| Error::failed(format!("resetting the lab's medium: {e}")))?,
        None => Written::Unknown("no media layer: nothing records the writes".into()),
    };
    let written = match (written, marked) {
        (Written::Ranges(_), Err(e)) => Written::Unknown(format!(
            "cannot mark the restore in progress in {}: {e}",
            marker.display()
        )),
        (Written::Ranges(_), Ok(())) if unfinished => Written::Unknown(format!(
            "an earlier restore did not finish ({} was left behind)",
            marker.display()
        )),
        (w, _) => w,
    };
    let failed = |e| Error::failed(format!("restoring the backing store: {e}"));
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let note = match written {
        Written::Ranges(ranges) => {
            let bytes = prepare::restore_ranges(path, &ranges).map_err(failed)?;
            format!(
                "restored the backing store: {} of {} rewritten, the ranges written since the last restore",
                format_size(bytes),
                format_size(size)
            )
        }
        Written::Unknown(why) => {
            let bytes = prepare::restore(path).map_err(failed)?;
            format!(
                "restored the backing store: all {} rewritten (the written ranges are not known: {why})",
                format_size(bytes)
            )
        }
    };
    let _ = std::fs::remove_file(&marker);
    crate::runner::Observer::note(&mut s.progress, &note);
    Ok(())
}
