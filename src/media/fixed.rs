//! A fixed-delay medium: every operation completes a set time after it
//! arrives, however many are in flight (no queueing, no cache). For tests and
//! for checking that the FUSE layer keeps a medium's times.

use crate::media::{MediaOp, Medium, OpKind};

/// Largest delay accepted, µs (10 s).
pub const MAX_US: u64 = 10_000_000;

/// Every read, write and flush takes its own fixed time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedDelay {
    name: String,
    read_ns: u64,
    write_ns: u64,
    flush_ns: u64,
}

impl FixedDelay {
    /// Delays in µs.
    pub fn new(read_us: u64, write_us: u64, flush_us: u64) -> FixedDelay {
        FixedDelay {
            name: format!("fixed:{read_us},{write_us},{flush_us}"),
            read_ns: read_us * 1000,
            write_ns: write_us * 1000,
            flush_ns: flush_us * 1000,
        }
    }

    /// Parse the part after `fixed:`: `US` for every operation, or
    /// `READ_US,WRITE_US[,FLUSH_US]` (flush defaults to the write's).
    pub fn parse(s: &str) -> Result<FixedDelay, String> {
        let v: Vec<u64> = s
            .split(',')
            .map(|p| {
                p.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&us| us <= MAX_US)
                    .ok_or_else(|| {
                        format!("media fixed:{s}: delay {p:?} must be whole µs from 0 to {MAX_US}")
                    })
            })
            .collect::<Result<_, _>>()?;
        match v[..] {
            [all] => Ok(FixedDelay::new(all, all, all)),
            [r, w] => Ok(FixedDelay::new(r, w, w)),
            [r, w, f] => Ok(FixedDelay::new(r, w, f)),
            _ => Err(format!(
                "media fixed:{s}: give US or READ_US,WRITE_US[,FLUSH_US]"
            )),
        }
    }
}

impl Medium for FixedDelay {
    fn name(&self) -> &str {
        &self.name
    }

    fn schedule(&self, op: &MediaOp, now_ns: u64) -> u64 {
        now_ns
            + match op.kind {
                OpKind::Read => self.read_ns,
                OpKind::Write => self.write_ns,
                OpKind::Flush => self.flush_ns,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_one_two_or_three_delays_and_names_bad_values() {
        assert_eq!(
            FixedDelay::parse("200").unwrap(),
            FixedDelay::new(200, 200, 200)
        );
        assert_eq!(
            FixedDelay::parse("100,300").unwrap(),
            FixedDelay::new(100, 300, 300)
        );
        let d = FixedDelay::parse("100, 300, 5000").unwrap();
        assert_eq!(d.name(), "fixed:100,300,5000");
        let op = MediaOp {
            kind: OpKind::Flush,
            offset: 0,
            len: 0,
            sync: false,
        };
        assert_eq!(d.schedule(&op, 7), 7 + 5_000_000);
        for bad in ["", "x", "-1", "1,2,3,4", "20000000"] {
            let e = FixedDelay::parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("media fixed:{bad}:")), "{e}");
        }
    }
}
