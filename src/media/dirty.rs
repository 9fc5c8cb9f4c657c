//! What was written through the media server since the lab last asked: a
//! map of 64 KiB chunks ([`DirtyMap`]) that every operation able to change
//! file data marks, and [`Written`], what the server tells the lab (the byte
//! ranges written, or that it cannot say which), with the text of the answer
//! file of the reset handshake ([`crate::media::serve`]).
//!
//! The map holds byte offsets of the store, the one file the lab serves
//! (`disk.img`, named to the server, [`Scope`]). Writes, fallocate, truncates
//! and truncating opens of the store mark the ranges they change; the same
//! of any other file (a metadata workload's files over NFS, say) mark
//! nothing. An operation whose change it cannot bound (an unlink or rename
//! of the store's name, a fallocate that moves data, a change past what the
//! map covers) marks everything: the lab then restores the whole store.
//! Once the store's name has been unlinked or renamed, or when the server
//! was not told which file is the store (or it was not there at start),
//! every file's changes count at the same offsets of the store: more to
//! restore, never less. The server does not serve COPY_FILE_RANGE: the
//! kernel copies with writes, which it marks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The map's chunk: a write anywhere in one marks all of it. 64 KiB: five
/// minutes of 8K random writes at 915 a second over a 32 GiB store touch
/// nearly every 1 MiB chunk, but two fifths of the 64 KiB ones.
pub const CHUNK: u64 = 64 << 10;

/// How many bytes of a file the server's map covers (4 TiB: 64 Mi chunks,
/// 8 MiB of bits, 1 Mi words a take swaps); a change past it marks
/// everything.
pub const COVERS: u64 = 4 << 40;

/// Chunks written since the last [`DirtyMap::take`], one bit each, and
/// whether something changed data it cannot bound.
pub struct DirtyMap {
    words: Box<[AtomicU64]>,
    /// Why everything is marked (the first such operation), if it is.
    all: Mutex<Option<&'static str>>,
}

impl DirtyMap {
    /// A clean map of the first `covers` bytes (rounded up to 64 chunks).
    pub fn new(covers: u64) -> DirtyMap {
        let words = covers.div_ceil(CHUNK * 64).max(1) as usize;
        DirtyMap {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            all: Mutex::new(None),
        }
    }

    /// The bytes it covers.
    pub fn covers(&self) -> u64 {
        self.words.len() as u64 * 64 * CHUNK
    }

    /// Mark `[offset, offset + len)` written: one relaxed load per 64 chunks
    /// touched, and a `fetch_or` only where a bit is still clear. Call after
    /// the data changed, so a take between the two leaves it marked.
    pub fn mark(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let end = offset.saturating_add(len);
        if end > self.covers() {
            return self.mark_all("a change past the map's 4 TiB");
        }
        let (first, last) = (offset / CHUNK, (end - 1) / CHUNK);
        for w in first / 64..=last / 64 {
            let lo = if w == first / 64 { first % 64 } else { 0 };
            let hi = if w == last / 64 { last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            let word = &self.words[w as usize];
            if word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// Mark everything: `why` changed data in a way the map cannot bound.
    pub fn mark_all(&self, why: &'static str) {
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        all.get_or_insert(why);
    }

    /// What was written since the last take, and clear it: each word is
    /// swapped with zero, so a mark made during the take is either in this
    /// answer or left for the next.
    pub fn take(&self) -> Written {
        let all = self.all.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (w, word) in self.words.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::Relaxed);
            while bits != 0 {
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let from = (w as u64 * 64 + b) * CHUNK;
                match ranges.last_mut() {
                    Some(r) if r.1 == from => r.1 = from + CHUNK,
                    _ => ranges.push((from, from + CHUNK)),
                }
            }
        }
        match all {
            Some(why) => Written::Unknown(format!("{why} changed data the server cannot bound")),
            None => Written::Ranges(ranges),
        }
    }
}

/// Which file's changes the map records: the store's alone while the server
/// knows which file that is, else every file's (see the module's doc).
pub struct Scope {
    /// The store's name in the served directory (its root).
    name: Option<Vec<u8>>,
    /// The store's device and inode, as found at start.
    id: (u64, u64),
    /// The store is known: set at start when it was named and found, and
    /// cleared for good by an unlink or rename of its name.
    known: AtomicBool,
}

impl Scope {
    /// The store named `name` in the served directory, with `id` (device,
    /// inode) when it was found there; with either missing, every file counts.
    pub fn new(name: Option<Vec<u8>>, id: Option<(u64, u64)>) -> Scope {
        Scope {
            known: AtomicBool::new(name.is_some() && id.is_some()),
            name,
            id: id.unwrap_or((0, 0)),
        }
    }

    /// Every file counts (the store is not known, or no longer).
    pub fn every_file(&self) -> bool {
        !self.known.load(Ordering::Relaxed)
    }

    /// Changes to the file with this device and inode count.
    pub fn counts(&self, dev: u64, ino: u64) -> bool {
        self.every_file() || (dev, ino) == self.id
    }

    /// Whether unlinking or renaming `name` in a directory (`in_root`: the
    /// served directory itself) may change the store: it is the store's name
    /// there, or the store is not known.
    pub fn touches(&self, in_root: bool, name: &[u8]) -> bool {
        self.every_file() || (in_root && self.name.as_deref() == Some(name))
    }

    /// Whether the store's name still holds the file found at start, with
    /// `lookup` giving the device and inode a name holds now.
    pub fn still_holds(&self, lookup: impl FnOnce(&[u8]) -> Option<(u64, u64)>) -> bool {
        self.name.as_deref().and_then(lookup) == Some(self.id)
    }

    /// The store's name was unlinked or renamed: from now on every file
    /// counts (what the name holds next is not the file found at start).
    pub fn lose_track(&self) {
        self.known.store(false, Ordering::Relaxed);
    }
}

/// What the media server says was written since the lab last asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// These byte ranges `[from, to)`, chunk-aligned, sorted and apart.
    Ranges(Vec<(u64, u64)>),
    /// It cannot say which: why (the lab then restores everything).
    Unknown(String),
}

/// First line of the answer file, with its format version.
const HEADER: &str = "storlab-dirty 1";

/// What the lab writes into the answer file before its reset signal to ask
/// for the written ranges (a server that does not know it leaves it there).
pub const REQUEST: &str = "take\n";

impl Written {
    /// Bytes in its ranges (0 when unknown).
    pub fn bytes(&self) -> u64 {
        match self {
            Written::Ranges(r) => r.iter().map(|(f, t)| t - f).sum(),
            Written::Unknown(_) => 0,
        }
    }

    /// The answer file's text: `storlab-dirty 1`, then `range FROM TO` per
    /// range (bytes, `[FROM, TO)`) or one `unknown WHY`, then `end`.
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        match self {
            Written::Ranges(r) => {
                for (f, t) in r {
                    s.push_str(&format!("range {f} {t}\n"));
                }
            }
            Written::Unknown(why) => s.push_str(&format!("unknown {}\n", why.replace('\n', " "))),
        }
        s.push_str("end\n");
        s
    }

    /// Read an answer file's text back ([`Written::to_text`]); an error says
    /// what is wrong with it (another format version, a bad line, no end).
    pub fn parse(text: &str) -> Result<Written, String> {
        let mut lines = text.lines();
        match lines.next() {
            Some(HEADER) => {}
            other => {
                return Err(format!(
                    "first line {:?}, expected {HEADER:?}",
                    other.unwrap_or("")
                ));
            }
        }
        let mut ranges = Vec::new();
        let mut unknown = None;
        for line in lines {
            let mut words = line.splitn(2, ' ');
            match (words.next(), words.next()) {
                (Some("end"), None) => {
                    return Ok(match unknown {
                        Some(why) => Written::Unknown(why),
                        None => Written::Ranges(ranges),
                    });
                }
                (Some("unknown"), why) => unknown = Some(why.unwrap_or("").to_string()),
                (Some("range"), Some(rest)) => {
                    let bad = || format!("bad line {line:?} (expected: range FROM TO, FROM < TO)");
                    let (f, t) = rest.split_once(' ').ok_or_else(bad)?;
                    let f: u64 = f.parse().map_err(|_| bad())?;
                    let t: u64 = t.parse().map_err(|_| bad())?;
                    if f >= t {
                        return Err(bad());
                    }
                    ranges.push((f, t));
                }
                _ => return Err(format!("unknown line {line:?}")),
            }
        }
        Err("no end line (cut short)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = CHUNK;

    #[test]
    fn marks_come_back_as_merged_chunk_ranges_and_a_take_clears_them() {
        let d = DirtyMap::new(1 << 30);
        d.mark(5 * M + 10, 1); // chunk 5
        d.mark(6 * M, M); // chunk 6 exactly, joins 5
        d.mark(63 * M + 1, 2 * M); // 63..=65: across a word
        d.mark(200 * M - 1, 2); // 199 and 200
        d.mark(300 * M, 0); // nothing
        d.mark(5 * M, 1); // again: no change
        assert_eq!(
            d.take(),
            Written::Ranges(vec![(5 * M, 7 * M), (63 * M, 66 * M), (199 * M, 201 * M)])
        );
        assert_eq!(d.take(), Written::Ranges(vec![]), "the take cleared it");
        d.mark(0, 1);
        d.mark(d.covers() - 1, 1);
        let last = d.covers() / M - 1;
        assert_eq!(
            d.take(),
            Written::Ranges(vec![(0, M), (last * M, d.covers())])
        );
    }

    #[test]
    fn a_change_it_cannot_bound_marks_everything_until_the_next_take() {
        let d = DirtyMap::new(1 << 30);
        d.mark(M, 1);
        d.mark_all("a rename");
        d.mark_all("an unlink");
        match d.take() {
            Written::Unknown(why) => assert!(why.contains("a rename"), "{why}"),
            w => panic!("{w:?}"),
        }
        assert_eq!(d.take(), Written::Ranges(vec![]));
        d.mark(d.covers() - 1, 2);
        assert!(matches!(d.take(), Written::Unknown(w) if w.contains("past")));
    }

    #[test]
    fn marks_from_many_threads_are_all_taken() {
        let d = std::sync::Arc::new(DirtyMap::new(1 << 30));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let d = d.clone();
                std::thread::spawn(move || {
                    for i in 0..256u64 {
                        d.mark((i * 4 + t) * M, 4096);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(d.take(), Written::Ranges(vec![(0, 1024 * M)]));
    }

    #[test]
    fn the_answer_file_reads_back_and_a_bad_one_is_named() {
        for w in [
            Written::Ranges(vec![(0, M), (3 * M, 9 * M)]),
            Written::Ranges(vec![]),
            Written::Unknown("passthrough mode".into()),
        ] {
            assert_eq!(Written::parse(&w.to_text()).unwrap(), w);
        }
        assert_eq!(Written::Ranges(vec![(0, M), (3 * M, 9 * M)]).bytes(), 7 * M);
        let e = Written::parse(REQUEST).unwrap_err();
        assert!(e.contains("storlab-dirty 1"), "{e}");
        let e = Written::parse("storlab-dirty 2\nend\n").unwrap_err();
        assert!(e.contains("storlab-dirty 2"), "{e}");
        let e = Written::parse("storlab-dirty 1\nrange 5 3\nend\n").unwrap_err();
        assert!(e.contains("range 5 3"), "{e}");
        let e = Written::parse("storlab-dirty 1\nrange 0 1048576\n").unwrap_err();
        assert!(e.contains("no end"), "{e}");
    }
}
