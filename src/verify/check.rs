//! Checking one verify block against what the run expects it to hold.

use super::format::{Header, MAGIC, VBLOCK};
use super::map::Entry;
use std::fmt;

/// What is wrong with a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Its checksum does not match its content (bytes changed on the way or at rest).
    Corrupt,
    /// A valid block written for another offset or another target.
    Misdirected,
    /// A valid block older than the last acknowledged write to it (a lost write).
    Stale,
    /// A valid block of this run that no acknowledged or in-flight write explains.
    Unexpected,
    /// An acknowledged write is missing: the block holds no verify header
    /// (the prepared content, zeros, or anything else).
    Lost,
    /// Neither the prepared content nor a verify block.
    Unknown,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Corrupt => "corrupt block (bad checksum)",
            Problem::Misdirected => "misdirected block",
            Problem::Stale => "stale block (lost write)",
            Problem::Unexpected => "unexpected block",
            Problem::Lost => "lost write (no verify header)",
            Problem::Unknown => "unknown data (neither prepared content nor a verify block)",
        })
    }
}

/// One bad block, as reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bad {
    /// The store (file:PATH or the target URL).
    pub store: String,
    /// Byte offset of the block.
    pub offset: u64,
    /// What is wrong.
    pub problem: Problem,
    /// The header the run expected.
    pub expected: String,
    /// The header found (or what was found instead).
    pub found: String,
}

impl fmt::Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {} at offset {}: expected {}; found {}",
            self.problem, self.store, self.offset, self.expected, self.found
        )
    }
}

/// What one block should hold.
pub struct Expect<'a> {
    /// Target id of its store.
    pub target: u64,
    /// Its offset.
    pub offset: u64,
    /// The run whose writes the entry describes.
    pub run: u32,
    /// Its last acknowledged (and in-doubt) writes in that run.
    pub entry: Entry,
    /// Accept a newer write of the run than the entry's (a journal lags the
    /// acknowledgements, and a write may have been in flight at a crash).
    pub newer_ok: bool,
    /// The prepared content of the block, when known.
    pub prepared: Option<&'a [u8]>,
}

impl Expect<'_> {
    fn describe(&self) -> String {
        let e = &self.entry;
        if e.acked == 0 && e.doubt == 0 {
            return "the prepared content or a block of an earlier run".into();
        }
        let mut s = format!(
            "target {:016x} offset {} run {:08x} ",
            self.target, self.offset, self.run
        );
        if e.acked > 0 {
            s.push_str(&format!("seq {} writer {}", e.acked, e.writer));
            if e.doubt > e.acked {
                s.push_str(&format!(" or seq {} (in flight)", e.doubt));
            } else if self.newer_ok {
                s.push_str(" or a later seq");
            }
        } else {
            s.push_str(&format!(
                "seq {} (in flight) or the previous content",
                e.doubt
            ));
        }
        s
    }
}

/// Check `block` ([`VBLOCK`] bytes) against `exp`; `Err` says what is wrong,
/// with the expected and found headers.
pub fn check_block(block: &[u8], exp: &Expect) -> Result<(), (Problem, String, String)> {
    debug_assert_eq!(block.len(), VBLOCK);
    let h = Header::parse(block);
    let e = &exp.entry;
    let fail = |p: Problem, found: String| Err((p, exp.describe(), found));
    if h.magic != MAGIC {
        let is_prepared = exp.prepared.is_some_and(|p| p == block);
        let found = if is_prepared {
            "the prepared content".to_string()
        } else if block.iter().all(|&b| b == 0) {
            "all zeros".to_string()
        } else {
            format!("{h}")
        };
        return if e.acked > 0 {
            fail(Problem::Lost, found)
        } else if e.doubt > 0 || is_prepared || exp.prepared.is_none() {
            // An in-doubt write that never landed, the prepared content, or a
            // store whose prepared content is unknown (nothing to compare).
            Ok(())
        } else {
            fail(Problem::Unknown, found)
        };
    }
    if !h.checksum_ok(block) {
        return fail(
            Problem::Corrupt,
            format!("{h} (checksum {:016x} does not match)", h.checksum),
        );
    }
    if h.target != exp.target || h.offset != exp.offset {
        return fail(Problem::Misdirected, format!("{h}"));
    }
    if h.run != exp.run {
        // A block from an earlier run: fine where this run never wrote.
        return if e.acked > 0 {
            fail(Problem::Stale, format!("{h} (an earlier run's data)"))
        } else {
            Ok(())
        };
    }
    if h.seq == e.acked && e.acked > 0 || h.seq == e.doubt && e.doubt > 0 {
        Ok(())
    } else if h.seq < e.acked {
        fail(Problem::Stale, format!("{h}"))
    } else if exp.newer_ok {
        Ok(())
    } else {
        fail(Problem::Unexpected, format!("{h}"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{format, target_id};
    use super::*;

    fn exp(entry: Entry, prepared: Option<&[u8]>) -> Expect<'_> {
        Expect {
            target: target_id("s"),
            offset: 4096,
            run: 1,
            entry,
            newer_ok: false,
            prepared,
        }
    }

    fn block(seq: u64, run: u32, offset: u64) -> Vec<u8> {
        let mut b = vec![7u8; VBLOCK];
        format(&mut b, target_id("s"), offset, seq, 0, run);
        b
    }

    #[test]
    fn classifies_every_case() {
        let acked = Entry {
            acked: 5,
            writer: 0,
            doubt: 0,
        };
        assert!(check_block(&block(5, 1, 4096), &exp(acked, None)).is_ok());
        let p =
            |b: &[u8], e: Entry, prep: Option<&[u8]>| check_block(b, &exp(e, prep)).unwrap_err().0;
        assert_eq!(p(&block(4, 1, 4096), acked, None), Problem::Stale);
        assert_eq!(p(&block(6, 1, 4096), acked, None), Problem::Unexpected);
        assert_eq!(p(&block(5, 1, 8192), acked, None), Problem::Misdirected);
        assert_eq!(p(&block(5, 2, 4096), acked, None), Problem::Stale);
        let mut c = block(5, 1, 4096);
        c[300] ^= 0x10;
        assert_eq!(p(&c, acked, None), Problem::Corrupt);
        let prepared = vec![9u8; VBLOCK];
        assert_eq!(p(&prepared, acked, Some(&prepared)), Problem::Lost);
        // Never written in this run.
        let none = Entry::default();
        assert!(check_block(&prepared, &exp(none, Some(&prepared))).is_ok());
        assert!(check_block(&block(3, 2, 4096), &exp(none, Some(&prepared))).is_ok());
        assert_eq!(
            p(&vec![1u8; VBLOCK], none, Some(&prepared)),
            Problem::Unknown
        );
        assert_eq!(
            p(&block(3, 1, 4096), none, Some(&prepared)),
            Problem::Unexpected
        );
        // In doubt: either version.
        let doubt = Entry {
            acked: 5,
            writer: 0,
            doubt: 9,
        };
        assert!(check_block(&block(5, 1, 4096), &exp(doubt, None)).is_ok());
        assert!(check_block(&block(9, 1, 4096), &exp(doubt, None)).is_ok());
        assert_eq!(p(&block(7, 1, 4096), doubt, None), Problem::Unexpected);
        // A journal accepts later writes of the run, never earlier ones.
        let mut j = exp(acked, None);
        j.newer_ok = true;
        assert!(check_block(&block(8, 1, 4096), &j).is_ok());
        assert_eq!(
            check_block(&block(4, 1, 4096), &j).unwrap_err().0,
            Problem::Stale
        );
    }
}
