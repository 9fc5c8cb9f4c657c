//! `storlab verify`: re-read every block a journal or a saved map says was
//! written and check it holds what the last acknowledged write put there.

use super::Loaded;
use super::check::{Bad, Expect, check_block};
use super::format::{MAGIC, VBLOCK, target_id};
use super::journal::StoreInfo;
use crate::backends;
use crate::io::{BufferPool, Io, Lane, OpenOptions};
use crate::plan::Disk;
use crate::target::Target;
use crate::workload::content;
use std::collections::BTreeMap;
use std::time::Duration;

/// Verify blocks per read (64 KiB).
pub const EXTENT_BLOCKS: u32 = 128;
/// How long one read may take before the check gives up on the target.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How `storlab verify` reads.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Reads in flight.
    pub depth: usize,
    /// Bypass the page cache (O_DIRECT) where the backend has one.
    pub direct: bool,
    /// Bad blocks kept in full in the outcome (all are counted).
    pub keep: usize,
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Stores checked.
    pub stores: Vec<String>,
    /// Blocks checked.
    pub blocks: u64,
    /// Bad blocks found.
    pub bad_count: u64,
    /// The first `keep` bad blocks.
    pub bad: Vec<Bad>,
}

/// Check every written block of `target`'s stores in `loaded`: the stores
/// written through `target`, or else the store whose storage `target`
/// reaches under another URL (the same identity, [`StoreInfo::key`]).
pub fn verify_target(loaded: &Loaded, target: &Target, opts: &Options) -> Result<Outcome, String> {
    let name = target.storage().to_string();
    let mut stores: Vec<(&StoreInfo, &BTreeMap<u64, super::map::Entry>, Disk)> = loaded
        .stores
        .values()
        .filter(|(s, _)| s.target == name)
        .map(|(s, blocks)| {
            let disk = Disk {
                target: s.target.clone(),
                path: s.path.clone(),
                offset: 0,
                size: s.size,
            };
            (s, blocks, disk)
        })
        .collect();
    let mut identity = None;
    if stores.is_empty() {
        identity = probe_identity(target);
        if let Some(id) = &identity {
            stores = loaded
                .stores
                .values()
                .filter(|(s, _)| s.identity.as_ref() == Some(id))
                .map(|(s, blocks)| (s, blocks, single_disk(target, s.size)))
                .collect();
        }
    }
    if stores.is_empty() {
        let known: Vec<&str> = loaded
            .stores
            .values()
            .map(|(s, _)| s.target.as_str())
            .collect();
        let storage = identity
            .map(|id| format!(", nor any to its storage ({id})"))
            .unwrap_or_default();
        return Err(format!(
            "no writes to {name} are recorded{storage} (recorded targets: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    let mut out = Outcome::default();
    for (info, blocks, disk) in stores {
        out.stores.push(info.name.clone());
        check_store(loaded, target, info, blocks, &disk, opts, &mut out)?;
    }
    Ok(out)
}

/// The one disk a target names when it names a single store (a file, a
/// device, an NFS file, a LUN, an NBD export), sized `size`.
fn single_disk(target: &Target, size: u64) -> Disk {
    let path = match target {
        Target::File(p) | Target::Fc { path: p, .. } => Some(p.clone()),
        _ => None,
    };
    Disk {
        target: target.storage().to_string(),
        path,
        offset: 0,
        size,
    }
}

/// What the storage `target` names says it is, opened read-only for a
/// moment; `None` when it cannot be opened or says nothing.
fn probe_identity(target: &Target) -> Option<String> {
    let disk = single_disk(target, 0);
    let opts = OpenOptions {
        depth: 1,
        ..OpenOptions::default()
    };
    backends::open(target, &[&disk], &opts).ok()?.identity(0)
}

fn check_store(
    loaded: &Loaded,
    target: &Target,
    info: &StoreInfo,
    blocks: &BTreeMap<u64, super::map::Entry>,
    disk: &Disk,
    opts: &Options,
    out: &mut Outcome,
) -> Result<(), String> {
    // Consecutive written blocks, read EXTENT_BLOCKS at a time.
    let mut extents: Vec<(u64, u32)> = Vec::new();
    for &b in blocks.keys() {
        match extents.last_mut() {
            Some((first, n)) if *first + *n as u64 == b && *n < EXTENT_BLOCKS => *n += 1,
            _ => extents.push((b, 1)),
        }
    }
    let depth = opts.depth.max(1);
    let backend = backends::open(
        target,
        &[disk],
        &OpenOptions {
            direct: opts.direct,
            sync: None,
            write: false,
            depth: depth as u32,
            size_needed: 0,
            ..OpenOptions::default()
        },
    )
    .map_err(|e| format!("cannot open {} to verify it: {e}", info.name))?;
    let pool = BufferPool::new(depth, EXTENT_BLOCKS as usize * VBLOCK);
    let mut lane = Lane::new(backend, pool).map_err(|e| format!("{}: {e}", info.name))?;
    let id = target_id(info.key());
    let ios: Vec<Io> = extents
        .iter()
        .map(|&(first, n)| Io::read(first * VBLOCK as u64, n * VBLOCK as u32))
        .collect();
    let mut prepared = Vec::new();
    let done = |i: usize, result: Result<u32, i32>, buf: &[u8]| {
        let (first, n) = extents[i];
        let len = n as usize * VBLOCK;
        match result {
            Ok(got) if got as usize == len => {}
            other => {
                let why = match other {
                    Err(errno) => std::io::Error::from_raw_os_error(errno).to_string(),
                    Ok(got) => format!("short read: {got} of {len} bytes"),
                };
                return Err(format!(
                    "reading {len} bytes at offset {} to verify them: {why}",
                    first * VBLOCK as u64
                ));
            }
        }
        let needs_prepared = buf
            .chunks_exact(VBLOCK)
            .any(|b| b[..8] != MAGIC.to_le_bytes());
        prepared.clear();
        if needs_prepared && let Some(p) = &info.prepared {
            prepared.resize(len, 0);
            let k = content::prepared_bytes(
                &mut prepared,
                p.content,
                p.seed,
                p.chunk,
                p.size,
                first * VBLOCK as u64,
            );
            prepared.truncate(k);
        }
        for (i, block) in buf.chunks_exact(VBLOCK).enumerate() {
            let b = first + i as u64;
            let exp = Expect {
                target: id,
                offset: b * VBLOCK as u64,
                run: loaded.run,
                entry: blocks[&b],
                newer_ok: loaded.journal,
                prepared: (prepared.len() >= (i + 1) * VBLOCK)
                    .then(|| &prepared[i * VBLOCK..(i + 1) * VBLOCK]),
            };
            out.blocks += 1;
            if let Err((problem, expected, found)) = check_block(block, &exp) {
                out.bad_count += 1;
                if out.bad.len() < opts.keep {
                    out.bad.push(Bad {
                        store: info.name.clone(),
                        offset: exp.offset,
                        problem,
                        expected,
                        found,
                    });
                }
            }
        }
        Ok(())
    };
    lane.run(&ios, depth, READ_TIMEOUT, |_, _| {}, done)
        .map_err(|e| format!("{}: {e}", info.name))
}
