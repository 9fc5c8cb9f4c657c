//! The run's map of written blocks: per verify block, the last acknowledged
//! write (and a write in doubt), plus the in-flight lock that keeps two I/Os
//! off one block. Shared by every engine thread of a point; saved when the
//! point ends, however it ends.

use super::format::{VBLOCK, target_id};
use super::journal::{self, Journal, MAP_MAGIC, PreparedInfo, Record, StoreInfo, WriteRec};
use crate::plan::Plan;
use crate::prepare::{self, Ownership};
use crate::workload::{Content, Spec};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What is known of one verify block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Sequence number of the last acknowledged write (0: none).
    pub acked: u64,
    /// Its writer.
    pub writer: u32,
    /// Sequence number of a later write that was issued but never
    /// acknowledged (0: none): the block may hold it or `acked`.
    pub doubt: u64,
}

#[derive(Clone, Copy, Default)]
struct Cell {
    entry: Entry,
    busy: bool,
}

const SHARDS: usize = 64;
type Shard = HashMap<(u32, u64), Cell>;

/// The map of one point, shared by its engine threads.
pub struct Shared {
    /// The run (process) id written into every header.
    pub run: u32,
    /// The stores, indexed by store number.
    pub stores: Vec<StoreInfo>,
    /// `target_id` of each store.
    pub ids: Vec<u64>,
    /// Store of each disk of the plan.
    pub disk_store: Vec<u32>,
    /// Content written (payload of each block).
    pub content: Content,
    /// Content seed.
    pub seed: u64,
    shards: Vec<Mutex<Shard>>,
    journal: Mutex<Option<Journal>>,
    bad: AtomicU64,
    shown: Mutex<Vec<String>>,
}

fn shard_of(store: u32, block: u64) -> usize {
    let mut x = (block >> 3) ^ ((store as u64) << 48);
    (crate::workload::pattern::splitmix64(&mut x) as usize) % SHARDS
}

/// Check that `spec` can run verified: every size and alignment a multiple of
/// [`VBLOCK`]. The error names the option.
pub fn check_spec(spec: &Spec) -> Result<(), String> {
    let v = VBLOCK as u64;
    for g in &spec.groups {
        for (bs, _) in &g.access.bs.0 {
            if bs % v != 0 {
                return Err(format!(
                    "--verify needs block sizes that are multiples of {VBLOCK} bytes (group {}: bs {bs})",
                    g.name
                ));
            }
        }
        let a = g.access.alignment();
        if a % v != 0 {
            return Err(format!(
                "--verify needs an offset alignment that is a multiple of {VBLOCK} bytes (group {}: blockalign {a})",
                g.name
            ));
        }
    }
    if spec.journal.is_some() && spec.writes() && spec.sync == crate::workload::SyncMode::None {
        return Err(
            "--journal needs synchronous writes (--sync dsync or --sync sync): without them \
             an acknowledged write need not be durable, so the journal could not prove anything"
                .into(),
        );
    }
    if spec.offset % v != 0 || spec.size % v != 0 {
        return Err(format!(
            "--verify needs offset and size that are multiples of {VBLOCK} bytes (offset {}, size {})",
            spec.offset, spec.size
        ));
    }
    Ok(())
}

/// The prepared content of `path`, from its marker, when storlab prepared it fully.
pub fn prepared_info(path: &Path) -> Option<PreparedInfo> {
    match prepare::ownership(path) {
        Ok(Ownership::Ours(m)) if m.complete => Some(PreparedInfo {
            content: m.content,
            seed: m.seed,
            size: m.size,
            chunk: prepare::CHUNK,
        }),
        _ => None,
    }
}

impl Shared {
    /// The map for `plan` (prepared already, its backends open), continuing
    /// this run's saved maps of the same storage, with a journal at `journal`
    /// if given. `identities` holds what each disk's storage said it is
    /// (`None` where it said nothing): disks of one identity are one store,
    /// whatever URL reached them.
    pub fn new(
        plan: &Plan,
        spec: &Spec,
        journal: Option<&Path>,
        identities: &[Option<String>],
    ) -> Result<Shared, super::SetupError> {
        check_spec(spec)?;
        let mut stores: Vec<StoreInfo> = Vec::new();
        let mut disk_store = Vec::with_capacity(plan.disks.len());
        for (k, d) in plan.disks.iter().enumerate() {
            let info = StoreInfo {
                name: super::store_name(&d.name()),
                target: super::store_name(&d.target),
                path: d.path.clone(),
                size: d.offset + d.size,
                prepared: None,
                identity: identities.get(k).cloned().flatten(),
            };
            let i = match stores.iter().position(|s| s.key() == info.key()) {
                Some(i) => {
                    stores[i].size = stores[i].size.max(info.size);
                    i
                }
                None => {
                    let prepared = info.path.as_deref().and_then(prepared_info);
                    stores.push(StoreInfo { prepared, ..info });
                    stores.len() - 1
                }
            };
            disk_store.push(i as u32);
        }
        let ids = stores.iter().map(|s| target_id(s.key())).collect();
        let shared = Shared {
            run: super::run_id(),
            stores,
            ids,
            disk_store,
            content: spec.content,
            seed: spec.seed,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            journal: Mutex::new(None),
            bad: AtomicU64::new(0),
            shown: Mutex::new(Vec::new()),
        };
        shared.load_saved()?;
        if let Some(path) = journal {
            let decl: Vec<(u32, StoreInfo)> = shared
                .stores
                .iter()
                .enumerate()
                .map(|(i, s)| (i as u32, s.clone()))
                .collect();
            let j = Journal::open(path, shared.run, &decl)?;
            *shared.journal.lock().expect("journal lock") = Some(j);
        }
        Ok(shared)
    }

    /// Continue this run's maps saved by earlier points: those of the same
    /// targets, and those of the same storage reached by another target.
    fn load_saved(&self) -> Result<(), String> {
        let mut paths: Vec<PathBuf> = self.targets().iter().map(|t| super::map_path(t)).collect();
        for s in &self.stores {
            if let Some(id) = &s.identity {
                paths.extend(saved_for(self.run, id));
            }
        }
        paths.sort();
        paths.dedup();
        for path in paths {
            if !path.exists() {
                continue;
            }
            let Ok(saved) = super::Loaded::from_file(&path, false) else {
                continue; // an unreadable old map is replaced
            };
            if saved.run != self.run {
                continue;
            }
            for (info, blocks) in saved.stores.into_values() {
                let Some(si) = self.stores.iter().position(|s| s.key() == info.key()) else {
                    continue;
                };
                for (block, entry) in blocks {
                    let mut sh = self.shards[shard_of(si as u32, block)].lock().expect("map");
                    let cell = sh.entry((si as u32, block)).or_default();
                    // Two maps of one store (two targets): the later write wins.
                    if entry.acked >= cell.entry.acked {
                        cell.entry = entry;
                    }
                }
            }
        }
        Ok(())
    }

    /// The targets of the stores, sorted, once each.
    pub fn targets(&self) -> Vec<String> {
        let mut t: Vec<String> = self.stores.iter().map(|s| s.target.clone()).collect();
        t.sort();
        t.dedup();
        t
    }

    /// Lock blocks `[first, first + count)` of `store` for one I/O; false
    /// (and nothing locked) when another I/O holds any of them.
    pub fn claim(&self, store: u32, first: u64, count: u32) -> bool {
        for b in first..first + count as u64 {
            let mut sh = self.shards[shard_of(store, b)].lock().expect("map");
            let c = sh.entry((store, b)).or_default();
            if c.busy {
                drop(sh);
                self.release(store, first, (b - first) as u32);
                return false;
            }
            c.busy = true;
        }
        true
    }

    /// Unlock blocks without changing what they hold.
    pub fn release(&self, store: u32, first: u64, count: u32) {
        self.update(store, first, count, |_| {});
    }

    fn update(&self, store: u32, first: u64, count: u32, f: impl Fn(&mut Entry)) {
        for b in first..first + count as u64 {
            let mut sh = self.shards[shard_of(store, b)].lock().expect("map");
            let c = sh.entry((store, b)).or_default();
            c.busy = false;
            f(&mut c.entry);
            if c.entry == Entry::default() {
                sh.remove(&(store, b));
            }
        }
    }

    /// A write was acknowledged: record it (and journal it), unlock.
    pub fn acked(&self, w: WriteRec) {
        self.update(w.store, w.first, w.count, |e| {
            e.acked = w.seq;
            e.writer = w.writer;
            if e.doubt <= w.seq {
                e.doubt = 0;
            }
        });
        if let Some(j) = self.journal.lock().expect("journal lock").as_ref() {
            j.record(&[w]);
        }
    }

    /// A write failed or was never reaped: the blocks may hold it or their
    /// previous content; unlock.
    pub fn in_doubt(&self, w: WriteRec) {
        self.update(w.store, w.first, w.count, |e| e.doubt = e.doubt.max(w.seq));
    }

    /// What is known of a block.
    pub fn entry(&self, store: u32, block: u64) -> Entry {
        let sh = self.shards[shard_of(store, block)].lock().expect("map");
        sh.get(&(store, block)).map(|c| c.entry).unwrap_or_default()
    }

    /// Count bad blocks found by reads.
    pub fn add_bad(&self, n: u64) {
        self.bad.fetch_add(n, Ordering::Relaxed);
    }

    /// Keep the report of a bad block that was printed in full (a fleet
    /// agent sends these to its controller).
    pub fn shown_bad(&self, report: String) {
        self.shown.lock().expect("shown lock").push(report);
    }

    /// The reports kept by [`Shared::shown_bad`], in the order found.
    pub fn take_shown(&self) -> Vec<String> {
        std::mem::take(&mut *self.shown.lock().expect("shown lock"))
    }

    /// Bad blocks found so far.
    pub fn bad(&self) -> u64 {
        self.bad.load(Ordering::Relaxed)
    }

    /// Blocks with an acknowledged or in-doubt write.
    pub fn written_blocks(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("map").len())
            .sum()
    }

    /// Close the journal, if any (and not closed yet): `Ok` with its path
    /// when every write handed to it was journaled, `Err` naming it otherwise.
    pub fn close_journal(&self) -> Option<Result<PathBuf, String>> {
        let j = self.journal.lock().expect("journal lock").take()?;
        let path = j.path().to_path_buf();
        Some(j.close().map(|_| path))
    }

    /// Close the journal and save one map per target (atomically). Returns
    /// the files written; `Err` names the file that could not be written.
    pub fn save(&self) -> Result<Vec<super::SavedMap>, String> {
        let mut errors = Vec::new();
        if let Some(j) = self.journal.lock().expect("journal lock").take()
            && let Err(e) = j.close()
        {
            errors.push(e);
        }
        let mut all: BTreeMap<(u32, u64), Entry> = BTreeMap::new();
        for s in &self.shards {
            for (k, c) in s.lock().expect("map").iter() {
                if c.entry != Entry::default() {
                    all.insert(*k, c.entry);
                }
            }
        }
        let mut written = Vec::new();
        for target in self.targets() {
            let mut bytes = journal::file_header(MAP_MAGIC, self.run);
            let mut acked = Vec::new();
            let mut doubt = Vec::new();
            for (i, s) in self.stores.iter().enumerate() {
                if s.target != target {
                    continue;
                }
                journal::encode(&Record::Store(i as u32, s.clone()), &mut bytes);
                for (&(store, block), e) in all.range((i as u32, 0)..(i as u32 + 1, 0)) {
                    push_run(&mut acked, store, block, e.acked, e.writer);
                    push_run(&mut doubt, store, block, e.doubt, 0);
                }
            }
            for chunk in acked.chunks(4096) {
                journal::encode(&Record::Writes(chunk.to_vec()), &mut bytes);
            }
            for chunk in doubt.chunks(4096) {
                journal::encode(&Record::Doubt(chunk.to_vec()), &mut bytes);
            }
            let path = super::map_path(&target);
            if let Some(dir) = path.parent()
                && let Err(e) = std::fs::create_dir_all(dir)
            {
                errors.push(format!("cannot create {}: {e}", dir.display()));
                continue;
            }
            match journal::write_file(&path, &bytes) {
                Ok(()) => {
                    for s in self.stores.iter().filter(|s| s.target == target) {
                        if let Some(id) = &s.identity {
                            remember_saved(self.run, id, &path);
                        }
                    }
                    written.push(super::SavedMap {
                        target,
                        path: path.display().to_string(),
                    })
                }
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(written)
        } else {
            Err(errors.join("; "))
        }
    }
}

/// Where this process saved maps that hold a store of each identity, per
/// run: a later point that reaches the same storage by another target
/// continues them ([`Shared::load_saved`]).
static SAVED: Mutex<BTreeMap<(u32, String), Vec<PathBuf>>> = Mutex::new(BTreeMap::new());

fn remember_saved(run: u32, identity: &str, path: &Path) {
    let mut saved = SAVED.lock().expect("saved maps");
    let paths = saved.entry((run, identity.to_string())).or_default();
    if !paths.iter().any(|p| p == path) {
        paths.push(path.to_path_buf());
    }
}

fn saved_for(run: u32, identity: &str) -> Vec<PathBuf> {
    let saved = SAVED.lock().expect("saved maps");
    saved
        .get(&(run, identity.to_string()))
        .cloned()
        .unwrap_or_default()
}

/// Append block `block` with `seq` to `runs`, extending the last run when it
/// is the same write on the previous block.
fn push_run(runs: &mut Vec<WriteRec>, store: u32, block: u64, seq: u64, writer: u32) {
    if seq == 0 {
        return;
    }
    if let Some(last) = runs.last_mut()
        && last.store == store
        && last.seq == seq
        && last.writer == writer
        && last.first + last.count as u64 == block
        && last.count < u32::MAX
    {
        last.count += 1;
        return;
    }
    runs.push(WriteRec {
        store,
        count: 1,
        first: block,
        seq,
        writer,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared {
            run: 1,
            stores: Vec::new(),
            ids: Vec::new(),
            disk_store: Vec::new(),
            content: Content::Random,
            seed: 1,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            journal: Mutex::new(None),
            bad: AtomicU64::new(0),
            shown: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn a_block_in_flight_cannot_be_claimed_twice() {
        let s = shared();
        assert!(s.claim(0, 10, 8));
        // Overlapping on one block: refused, and nothing stays locked by it.
        assert!(!s.claim(0, 17, 8));
        assert!(s.claim(0, 18, 8));
        assert!(s.claim(1, 10, 8), "another store is independent");
        let w = WriteRec {
            store: 0,
            count: 8,
            first: 10,
            seq: 4,
            writer: 2,
        };
        s.acked(w);
        assert!(s.claim(0, 17, 1));
        assert_eq!(s.entry(0, 12).acked, 4);
        // A write that never completed leaves its blocks in doubt.
        s.in_doubt(WriteRec { seq: 9, ..w });
        let e = s.entry(0, 12);
        assert_eq!((e.acked, e.doubt, e.writer), (4, 9, 2));
        s.acked(WriteRec { seq: 11, ..w });
        assert_eq!(s.entry(0, 12).doubt, 0);
    }
}
