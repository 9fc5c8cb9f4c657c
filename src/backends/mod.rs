//! Backends: where bytes go. Each implements [`crate::io::Backend`]; this
//! module maps a [`crate::target::Target`] to the backend that serves it.

pub mod dir;
pub mod fc;
pub mod file;
pub mod iscsi;
pub mod nbd;
pub mod nfs;
pub mod null;

use crate::io::fsops::FileOps;
use crate::io::{Backend, BackendError, OpenOptions};
use crate::plan::Disk;
use crate::target::Target;
use crate::workload::IoEngine;

/// Open the backend for `target` over `disks` (the disks one engine thread uses).
pub fn open(
    target: &Target,
    disks: &[&Disk],
    opts: &OpenOptions,
) -> Result<Box<dyn Backend>, BackendError> {
    if !matches!(target, Target::File(_) | Target::Fc { .. }) {
        refuse_polling(target, opts)?;
        refuse_psync(target, opts)?;
    }
    match target {
        Target::Null => Ok(Box::new(null::NullBackend::new(opts.depth as usize))),
        Target::File(_) => open_files(disks, opts),
        // The FC role: a LUN the host does not cache, whatever the workload says.
        Target::Fc { link, wire, .. } => Ok(Box::new(fc::FcCapped::new(
            open_files(
                disks,
                &OpenOptions {
                    direct: true,
                    ..*opts
                },
            )?,
            &target.to_string(),
            *wire,
            link,
        )?)),
        Target::Nbd { .. } => Ok(Box::new(nbd::NbdBackend::open(
            &disk_targets(disks)?,
            opts,
        )?)),
        Target::Nfs { .. } => Ok(Box::new(nfs::NfsBackend::open(
            &disk_targets(disks)?,
            opts,
        )?)),
        Target::Iscsi { .. } => Ok(Box::new(iscsi::IscsiBackend::open(
            &disk_targets(disks)?,
            opts,
            &iscsi::default_initiator(),
        )?)),
    }
}

/// `--sqpoll` and `--hipri` are io_uring's: a target whose backend does not
/// use io_uring (null, NBD, NFS, iSCSI) refuses them with one line rather
/// than running without them.
fn refuse_polling(target: &Target, opts: &OpenOptions) -> Result<(), BackendError> {
    let option = match (opts.sqpoll, opts.hipri) {
        (false, false) => return Ok(()),
        (true, _) => "sqpoll",
        (false, true) => "hipri",
    };
    Err(BackendError::new(
        option,
        format!(
            "the {target} target's backend does not use io_uring, and io_uring polling \
             applies to file: targets only (files and block devices): turn {option} off (--{option} 0)"
        ),
    ))
}

/// `--ioengine psync` is the file backend's: a target served by another
/// backend (null, NBD, NFS, iSCSI) refuses it with one line.
fn refuse_psync(target: &Target, opts: &OpenOptions) -> Result<(), BackendError> {
    if opts.ioengine != IoEngine::Psync {
        return Ok(());
    }
    Err(BackendError::new(
        "ioengine",
        format!(
            "psync runs on file: targets only (files and block devices), not on the {target} \
             target: use --ioengine io_uring (allowed: {})",
            IoEngine::ALLOWED
        ),
    ))
}

/// File operations (the metadata workload's contract) on the directory
/// `target` names: `file:DIR` or `nfs://HOST[:PORT]/EXPORT[/DIR]?version=…`
/// (see [`Target::parse_dir`]). The error is one line naming the target.
pub fn open_fs(target: &Target) -> Result<Box<dyn FileOps>, String> {
    match target {
        Target::File(dir) => Ok(Box::new(dir::DirOps::open(dir)?)),
        Target::Nfs { .. } => Ok(Box::new(nfs::meta::NfsOps::open(target)?)),
        other => Err(format!(
            "{other}: file operations run on file:DIR and nfs:// targets only \
             (allowed: file:DIR, nfs://HOST[:PORT]/EXPORT[/DIR]?version=3|4|4.1)"
        )),
    }
}

/// The file backend of `opts.ioengine` over the disks' paths.
fn open_files(disks: &[&Disk], opts: &OpenOptions) -> Result<Box<dyn Backend>, BackendError> {
    let paths: Vec<_> = disks
        .iter()
        .map(|d| {
            d.path
                .clone()
                .ok_or_else(|| BackendError::new(d.name(), "file disk without a path"))
        })
        .collect::<Result<_, _>>()?;
    Ok(match opts.ioengine {
        IoEngine::IoUring => Box::new(file::FileBackend::open(&paths, opts)?),
        IoEngine::Psync if opts.sqpoll || opts.hipri => {
            return Err(BackendError::new(
                "ioengine",
                "psync has no sqpoll or hipri (io_uring's polling): use --ioengine io_uring \
                 or turn them off (--sqpoll 0, --hipri 0)",
            ));
        }
        IoEngine::Psync => Box::new(file::PsyncBackend::open(&paths, opts)?),
    })
}

/// The target of each disk, in the disks' order (protocol backends open one
/// connection per disk).
fn disk_targets(disks: &[&Disk]) -> Result<Vec<Target>, BackendError> {
    disks
        .iter()
        .map(|d| {
            Target::parse(&d.target).map_err(|e| BackendError::new(d.target.clone(), e.to_string()))
        })
        .collect()
}

/// The backend's name and features, and `also` (what the engine adds: its
/// submit rhythm), for the run's record.
pub fn describe(b: &dyn Backend, also: Option<String>) -> String {
    let features: Vec<String> = [b.features()]
        .into_iter()
        .chain(also)
        .filter(|f| !f.is_empty())
        .collect();
    if features.is_empty() {
        b.name().to_string()
    } else {
        format!("{}: {}", b.name(), features.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_and_psync_are_refused_off_files() {
        for (sqpoll, hipri, option) in [(true, false, "sqpoll"), (false, true, "hipri")] {
            let opts = OpenOptions {
                sqpoll,
                hipri,
                direct: hipri,
                depth: 1,
                ..OpenOptions::default()
            };
            let e = open(&Target::Null, &[], &opts).err().unwrap().to_string();
            assert_eq!(
                e,
                format!(
                    "{option}: the null: target's backend does not use io_uring, and io_uring \
                     polling applies to file: targets only (files and block devices): turn {option} off (--{option} 0)"
                )
            );
        }
        let psync = OpenOptions {
            ioengine: IoEngine::Psync,
            depth: 1,
            ..OpenOptions::default()
        };
        let e = open(&Target::Null, &[], &psync).err().unwrap().to_string();
        assert_eq!(
            e,
            "ioengine: psync runs on file: targets only (files and block devices), not on the \
             null: target: use --ioengine io_uring (allowed: io_uring, psync)"
        );
        // Without them the null target opens.
        let opts = OpenOptions {
            depth: 1,
            ..OpenOptions::default()
        };
        assert!(open(&Target::Null, &[], &opts).is_ok());
    }
}
