//! Data verification and the durability journal (`--verify`, `--journal`,
//! `storlab verify`); see docs/verify.md.
//!
//! * [`format`]: the self-describing 512-byte verify block and its checksum.
//! * [`map`]: the per-block map of acknowledged writes and in-flight locks,
//!   shared by a point's engine threads and saved when the point ends.
//! * [`hooks`]: what an engine thread calls at issue and completion.
//! * [`journal`]: the durable record of acknowledged writes (and the map's
//!   file format).
//! * [`check`]: the verdict on one block; [`reread`]: `storlab verify`.

pub mod check;
pub mod format;
pub mod hooks;
pub mod journal;
pub mod map;
pub mod reread;

use crate::engine::hooks::{PointHooks, ThreadHooks};
use crate::model::{HostVerify, SavedMap};
use crate::runner::{RunError, RunHooks};
use crate::target::Target;
use journal::Record;
use journal::StoreInfo;
use map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

static RUN_ID: AtomicU32 = AtomicU32::new(0);
static SEQ: AtomicU64 = AtomicU64::new(1);
static MAP_TAG: OnceLock<String> = OnceLock::new();

/// This process's run id, written into every verify header (random, never 0;
/// an agent takes its controller's, see [`set_run_id`]).
pub fn run_id() -> u32 {
    let id = RUN_ID.load(Ordering::Relaxed);
    if id != 0 {
        return id;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos ^ ((std::process::id() as u64) << 32);
    let fresh = (crate::workload::pattern::splitmix64(&mut x) as u32).max(1);
    match RUN_ID.compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => fresh,
        Err(set) => set,
    }
}

/// Use `id` (not 0) as the run id of the maps built from now on. A fleet agent
/// takes the controller's run id for each share it runs, so one `storlab run
/// --hosts` is one verify run on every host (its points continue one map per
/// host) and the next controller run starts afresh, as a new local process does.
pub fn set_run_id(id: u32) {
    if id != 0 {
        RUN_ID.store(id, Ordering::Relaxed);
    }
}

/// Name this process's saved maps with `tag` as well (set once, before any map
/// is saved): a fleet agent tags them with its name, so two agents on one host
/// running the same target keep one map each.
pub fn set_map_tag(tag: &str) {
    let _ = MAP_TAG.set(safe_tag(tag));
}

/// `tag` as a file-name part: ASCII letters, digits and `-` kept, anything
/// else `_`, at most 40 characters.
fn safe_tag(tag: &str) -> String {
    tag.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// The journal a fleet agent named `agent` writes for `--journal FILE`:
/// `FILE.agent-NAME` (NAME as in the agent's map names), on the agent's own
/// host, so two agents on one host never append to one file.
pub fn agent_journal_path(file: &Path, agent: &str) -> PathBuf {
    let mut s = file.as_os_str().to_os_string();
    s.push(format!(".agent-{}", safe_tag(agent)));
    PathBuf::from(s)
}

/// The next write sequence number: unique and increasing over the process,
/// so the order of the writes to one block (never two in flight) is the order
/// of their numbers.
pub fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Where verify maps are saved: `$STORLAB_VERIFY_DIR`, else
/// `$XDG_STATE_HOME/storlab/verify`, else `~/.local/state/storlab/verify`.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("STORLAB_VERIFY_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("storlab/verify");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".local/state/storlab/verify")
}

/// The name a store is known by in verify headers, maps and journals: its
/// target URL without how it is reached (`nconnect`, NBD replies: see
/// [`Target::storage`]), so that a block written over four connections
/// verifies over one.
pub fn store_name(target: &str) -> String {
    match Target::parse(target) {
        Ok(t) => t.storage().to_string(),
        Err(_) => target.to_string(),
    }
}

/// The saved map of `target` (a target URL as storlab prints it).
pub fn map_path(target: &str) -> PathBuf {
    let safe: String = target
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(80)
        .collect();
    let id = format::target_id(target);
    match MAP_TAG.get() {
        Some(tag) => state_dir().join(format!("{safe}-{:08x}-{tag}.map", id as u32)),
        None => state_dir().join(format!("{safe}-{:08x}.map", id as u32)),
    }
}

/// A journal or saved map, replayed: per store, what each written block holds.
#[derive(Debug)]
pub struct Loaded {
    /// The run that wrote it.
    pub run: u32,
    /// True for a journal (later writes than recorded are acceptable).
    pub journal: bool,
    /// Store name → (store, block → entry).
    pub stores: BTreeMap<String, (StoreInfo, BTreeMap<u64, Entry>)>,
    /// Bytes of a torn last record that were ignored.
    pub torn_bytes: usize,
}

impl Loaded {
    /// Read and replay `path`; `expect_journal` refuses a map given as a
    /// journal (and the reverse), naming the file.
    pub fn from_file(path: &Path, expect_journal: bool) -> Result<Loaded, String> {
        let c = journal::read(path)?;
        let is_journal = c.magic == journal::JOURNAL_MAGIC;
        if is_journal != expect_journal {
            return Err(format!(
                "{} is a storlab {}, not a {}",
                path.display(),
                if is_journal { "journal" } else { "verify map" },
                if expect_journal {
                    "journal"
                } else {
                    "verify map"
                }
            ));
        }
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut stores: BTreeMap<String, (StoreInfo, BTreeMap<u64, Entry>)> = BTreeMap::new();
        for r in c.records {
            match r {
                Record::Store(i, info) => {
                    names.insert(i, info.name.clone());
                    let e = stores
                        .entry(info.name.clone())
                        .or_insert_with(|| (info.clone(), BTreeMap::new()));
                    e.0.size = e.0.size.max(info.size);
                }
                Record::Writes(w) | Record::Doubt(w) if w.is_empty() => {}
                r => {
                    let (acked, w) = match r {
                        Record::Writes(w) => (true, w),
                        Record::Doubt(w) => (false, w),
                        Record::Store(..) => unreachable!("handled above"),
                    };
                    for rec in w {
                        let name = names.get(&rec.store).ok_or_else(|| {
                            format!(
                                "{}: a write names store {} that was never declared",
                                path.display(),
                                rec.store
                            )
                        })?;
                        let blocks = &mut stores.get_mut(name).expect("declared store").1;
                        for b in rec.first..rec.first + rec.count as u64 {
                            let e = blocks.entry(b).or_default();
                            if acked && rec.seq > e.acked {
                                e.acked = rec.seq;
                                e.writer = rec.writer;
                            } else if !acked {
                                e.doubt = e.doubt.max(rec.seq);
                            }
                        }
                    }
                }
            }
        }
        for (_, blocks) in stores.values_mut() {
            for e in blocks.values_mut() {
                if e.doubt <= e.acked {
                    e.doubt = 0;
                }
            }
        }
        Ok(Loaded {
            run: c.run,
            journal: is_journal,
            stores,
            torn_bytes: c.torn_bytes,
        })
    }
}

/// Why verify mode could not start: the user's input (a spec it cannot
/// verify, a journal path that names no file) or the environment (the disk is
/// full, read-only, failing, or the file is not writable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    /// The user must change the command (exit 2).
    Input(String),
    /// The storage or the system failed; the command was fine (exit 1).
    Environment(String),
}

impl SetupError {
    /// `source` failing on `what`: a wrong path (no such directory, not a
    /// directory, a directory, a name too long, a symlink loop) is input;
    /// anything else (ENOSPC, EIO, EROFS, EACCES, EDQUOT, ...) is the environment.
    pub fn io(what: String, source: &std::io::Error) -> SetupError {
        let msg = format!("{what}: {source}");
        match source.raw_os_error() {
            Some(
                libc::ENOENT | libc::ENOTDIR | libc::EISDIR | libc::ENAMETOOLONG | libc::ELOOP,
            ) => SetupError::Input(msg),
            _ => SetupError::Environment(msg),
        }
    }

    /// True when the environment, not the command, is at fault.
    pub fn is_environment(&self) -> bool {
        matches!(self, SetupError::Environment(_))
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Input(m) | SetupError::Environment(m) => f.write_str(m),
        }
    }
}

impl From<String> for SetupError {
    fn from(m: String) -> Self {
        SetupError::Input(m)
    }
}

impl From<SetupError> for RunError {
    fn from(e: SetupError) -> Self {
        match e {
            SetupError::Input(m) => RunError::Setup(m),
            SetupError::Environment(m) => RunError::Storage(m),
        }
    }
}

/// Verify mode as the runner's hooks: a point with `verify` or a journal gets
/// a block map shared by its engine threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verify;

impl RunHooks for Verify {
    fn start(
        &self,
        spec: &crate::workload::Spec,
        plan: &crate::plan::Plan,
        identities: &[Option<String>],
    ) -> Result<Option<std::sync::Arc<dyn PointHooks>>, RunError> {
        Ok(start(spec, plan, identities)?.map(|s| s as std::sync::Arc<dyn PointHooks>))
    }
}

impl PointHooks for map::Shared {
    fn thread(&self, thread_disks: &[u32], slots: usize) -> Box<dyn ThreadHooks + '_> {
        Box::new(hooks::Checker::new(self, thread_disks, slots))
    }
    fn finish(&self) -> HostVerify {
        finish(self)
    }
}

/// The block map of a point that runs in verify mode (`spec.verify`, or a
/// journal), built once its files are prepared and its backends open (each
/// disk's storage identity in `identities`); `None` otherwise. A bad spec
/// or journal path is [`SetupError::Input`]; a journal the system cannot
/// create or write is [`SetupError::Environment`].
pub fn start(
    spec: &crate::workload::Spec,
    plan: &crate::plan::Plan,
    identities: &[Option<String>],
) -> Result<Option<std::sync::Arc<map::Shared>>, SetupError> {
    if !spec.verify && spec.journal.is_none() {
        return Ok(None);
    }
    map::Shared::new(plan, spec, spec.journal.as_deref(), identities)
        .map(|s| Some(std::sync::Arc::new(s)))
}

/// The point ended (however): close the journal and save the map. A failure
/// is printed, naming the file, and returned; the point's own outcome stands.
pub fn finish(shared: &map::Shared) -> HostVerify {
    let journals = match shared.close_journal() {
        None => Ok(Vec::new()),
        Some(Ok(path)) => Ok(shared
            .targets()
            .into_iter()
            .map(|target| SavedMap {
                target,
                path: path.display().to_string(),
            })
            .collect()),
        Some(Err(e)) => {
            eprintln!("storlab: error: verify: {e}");
            Err(e)
        }
    };
    HostVerify {
        maps: shared
            .save()
            .inspect_err(|e| eprintln!("storlab: error: verify: {e}")),
        bad: shared.take_shown(),
        journals,
    }
}

#[cfg(test)]
mod setup_tests {
    use super::*;

    #[test]
    fn a_wrong_journal_path_is_input_and_a_failing_disk_is_the_environment() {
        let io = |errno| {
            SetupError::io(
                "journal /x".into(),
                &std::io::Error::from_raw_os_error(errno),
            )
        };
        for errno in [
            libc::ENOSPC,
            libc::EIO,
            libc::EROFS,
            libc::EACCES,
            libc::EDQUOT,
        ] {
            let e = io(errno);
            assert!(e.is_environment(), "errno {errno}: {e}");
            assert!(matches!(
                crate::runner::RunError::from(e),
                crate::runner::RunError::Storage(_)
            ));
        }
        for errno in [
            libc::ENOENT,
            libc::ENOTDIR,
            libc::EISDIR,
            libc::ENAMETOOLONG,
        ] {
            let e = io(errno);
            assert!(!e.is_environment(), "errno {errno}: {e}");
            assert!(matches!(
                crate::runner::RunError::from(e),
                crate::runner::RunError::Setup(_)
            ));
        }
        // A real journal in a directory that does not exist: input, named.
        let dir = std::env::temp_dir().join(format!("storlab-setup-{}", std::process::id()));
        let missing = dir.join("no-such-dir").join("j");
        let e = journal::Journal::open(&missing, 1, &[]).err().unwrap();
        assert!(!e.is_environment(), "{e}");
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn an_agent_journal_is_the_file_tagged_with_the_agent_name() {
        assert_eq!(
            agent_journal_path(Path::new("/srv/j.jrnl"), "host 1/a"),
            PathBuf::from("/srv/j.jrnl.agent-host_1_a")
        );
    }
}
