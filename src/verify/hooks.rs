//! What an engine thread calls in verify mode: at issue ([`Checker::next_io`],
//! [`Checker::prepare_write`]) and at completion ([`Checker::completed`]).
//!
//! **One I/O per block.** Before an I/O is queued its verify blocks are locked
//! in the shared map; an I/O that touches a locked block is held back in its
//! slot and retried (the same I/O, so sequential streams keep their order)
//! once the blocks are free, as vdbench does. So the last acknowledged write
//! to a block is always well defined, whichever thread or slot wrote it.

use super::check::{Bad, Expect, check_block};
use super::format::{VBLOCK, format};
use super::journal::WriteRec;
use super::map::Shared;
use crate::workload::Dir;
use crate::workload::content;
use crate::workload::pattern::Io;

/// Bad blocks printed in full per engine thread; the rest are counted.
pub const SHOWN: usize = 20;
/// How long a slot whose blocks are locked waits before it retries, ns.
pub const RETRY_NS: u64 = 50_000;

#[derive(Clone, Copy)]
struct Claim {
    store: u32,
    first: u64,
    count: u32,
    dir: Dir,
    seq: u64,
    writer: u32,
}

/// One engine thread's view of the shared map.
pub struct Checker<'a> {
    shared: &'a Shared,
    /// Store of each of the thread's disks (its local order).
    disks: Vec<u32>,
    claims: Vec<Option<Claim>>,
    pending: Vec<Option<Io>>,
    bad: u64,
    first_bad: Option<String>,
    scratch: Vec<u8>,
}

impl<'a> Checker<'a> {
    /// A checker for a thread whose disks are `thread_disks` (plan disk
    /// indices, in the thread's local order) and which has `slots` slots.
    pub fn new(shared: &'a Shared, thread_disks: &[u32], slots: usize) -> Self {
        Checker {
            shared,
            disks: thread_disks
                .iter()
                .map(|&d| shared.disk_store[d as usize])
                .collect(),
            claims: vec![None; slots],
            pending: vec![None; slots],
            bad: 0,
            first_bad: None,
            scratch: Vec::new(),
        }
    }

    /// The I/O slot `slot` issues next on its thread-local disk `disk`: the
    /// one it holds back, else `gen()`. `None` when its blocks are locked by
    /// another I/O (the slot keeps it and retries after [`RETRY_NS`]).
    pub fn next_io(&mut self, slot: u32, disk: u32, next: impl FnOnce() -> Io) -> Option<Io> {
        let s = slot as usize;
        let io = self.pending[s].take().unwrap_or_else(next);
        let store = self.disks[disk as usize];
        let first = io.offset / VBLOCK as u64;
        let count = (io.len as usize).div_ceil(VBLOCK) as u32;
        if !self.shared.claim(store, first, count) {
            self.pending[s] = Some(io);
            return None;
        }
        self.claims[s] = Some(Claim {
            store,
            first,
            count,
            dir: io.dir,
            seq: 0,
            writer: 0,
        });
        Some(io)
    }

    /// Fill the write buffer of `slot` (claimed by `next_io`): fresh content
    /// for a new sequence number, and a header in every verify block.
    pub fn prepare_write(&mut self, slot: u32, buf: &mut [u8], writer: u32) {
        let c = self.claims[slot as usize]
            .as_mut()
            .expect("a write is claimed before it is prepared");
        let seq = super::next_seq();
        c.seq = seq;
        c.writer = writer;
        let sh = self.shared;
        content::fill(buf, sh.content, sh.seed, seq);
        format(
            buf,
            sh.ids[c.store as usize],
            c.first * VBLOCK as u64,
            seq,
            writer,
            sh.run,
        );
    }

    /// The I/O of `slot` was not queued after all: unlock its blocks.
    pub fn unqueued(&mut self, slot: u32) {
        if let Some(c) = self.claims[slot as usize].take() {
            self.shared.release(c.store, c.first, c.count);
        }
    }

    /// The I/O of `slot` completed (`ok`: in full). A write is recorded as
    /// acknowledged (or in doubt when it failed); a read is checked block by
    /// block. Returns the number of bad blocks read.
    pub fn completed(&mut self, slot: u32, ok: bool, buf: &[u8]) -> u64 {
        let Some(c) = self.claims[slot as usize].take() else {
            return 0;
        };
        let rec = WriteRec {
            store: c.store,
            count: c.count,
            first: c.first,
            seq: c.seq,
            writer: c.writer,
        };
        match (c.dir, ok) {
            (Dir::Write, true) => self.shared.acked(rec),
            (Dir::Write, false) => self.shared.in_doubt(rec),
            (Dir::Read, false) => self.shared.release(c.store, c.first, c.count),
            (Dir::Read, true) => {
                let bad = self.check_read(&c, buf);
                self.shared.release(c.store, c.first, c.count);
                return bad;
            }
        }
        0
    }

    fn check_read(&mut self, c: &Claim, buf: &[u8]) -> u64 {
        let sh = self.shared;
        let store = &sh.stores[c.store as usize];
        let mut prepared_done = false;
        let mut bad = 0;
        for i in 0..c.count as usize {
            let block = &buf[i * VBLOCK..(i + 1) * VBLOCK];
            let b = c.first + i as u64;
            // The prepared content is computed once per read, only when a
            // block without a header needs it.
            if !prepared_done
                && block[..8] != super::format::MAGIC.to_le_bytes()
                && let Some(p) = &store.prepared
            {
                self.scratch.resize(buf.len(), 0);
                let n = content::prepared_bytes(
                    &mut self.scratch,
                    p.content,
                    p.seed,
                    p.chunk,
                    p.size,
                    c.first * VBLOCK as u64,
                );
                self.scratch.truncate(n);
                prepared_done = true;
            }
            let prepared = (prepared_done && self.scratch.len() >= (i + 1) * VBLOCK)
                .then(|| &self.scratch[i * VBLOCK..(i + 1) * VBLOCK]);
            let exp = Expect {
                target: sh.ids[c.store as usize],
                offset: b * VBLOCK as u64,
                run: sh.run,
                entry: sh.entry(c.store, b),
                newer_ok: false,
                prepared,
            };
            if let Err((problem, expected, found)) = check_block(block, &exp) {
                bad += 1;
                let report = Bad {
                    store: store.name.clone(),
                    offset: exp.offset,
                    problem,
                    expected,
                    found,
                };
                if self.bad + bad <= SHOWN as u64 {
                    eprintln!("storlab: verify: {report}");
                    sh.shown_bad(report.to_string());
                }
                self.first_bad.get_or_insert_with(|| report.to_string());
            }
        }
        self.bad += bad;
        sh.add_bad(bad);
        bad
    }

    /// The thread is done: writes still in flight are in doubt, reads are
    /// released (also done on drop). `Some` names what verification found wrong.
    pub fn finish(&mut self) -> Option<String> {
        self.settle();
        (self.bad > 0).then(|| {
            format!(
                "verify: {} bad block(s) read on this engine thread; first: {}",
                self.bad,
                self.first_bad.as_deref().unwrap_or("?")
            )
        })
    }

    fn settle(&mut self) {
        for c in self.claims.iter_mut().filter_map(Option::take) {
            if c.dir == Dir::Write && c.seq > 0 {
                self.shared.in_doubt(WriteRec {
                    store: c.store,
                    count: c.count,
                    first: c.first,
                    seq: c.seq,
                    writer: c.writer,
                });
            } else {
                self.shared.release(c.store, c.first, c.count);
            }
        }
    }
}

impl Drop for Checker<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

impl crate::engine::hooks::ThreadHooks for Checker<'_> {
    fn next_io(&mut self, slot: u32, disk: u32, next: &mut dyn FnMut() -> Io) -> Option<Io> {
        Checker::next_io(self, slot, disk, next)
    }
    fn retry_ns(&self) -> u64 {
        RETRY_NS
    }
    fn prepare_write(&mut self, slot: u32, buf: &mut [u8], writer: u32) {
        Checker::prepare_write(self, slot, buf, writer)
    }
    fn unqueued(&mut self, slot: u32) {
        Checker::unqueued(self, slot)
    }
    fn completed(&mut self, slot: u32, ok: bool, buf: &[u8]) -> u64 {
        Checker::completed(self, slot, ok, buf)
    }
    fn finish(&mut self) -> Option<String> {
        Checker::finish(self)
    }
}
