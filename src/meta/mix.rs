//! The operation mix: which file operations the metadata workload runs and
//! how often (`--mix create=10,read=40,...`), and the chooser that draws
//! each next operation from it.

use std::fmt;

/// One file operation of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Create a new file (exclusive) and write its content; open, write, close.
    Create,
    /// Overwrite a file's whole content; open, write, close.
    Write,
    /// Read a file's whole content; open, read, close.
    Read,
    /// Ask the storage for a file's attributes.
    Stat,
    /// Rename a file within its directory.
    Rename,
    /// Remove a file.
    Delete,
    /// List a directory.
    List,
}

impl Op {
    /// Every operation, in the order reports show them.
    pub const ALL: [Op; 7] = [
        Op::Create,
        Op::Write,
        Op::Read,
        Op::Stat,
        Op::Rename,
        Op::Delete,
        Op::List,
    ];

    /// The allowed names, for error messages.
    pub const NAMES: &'static str = "create, write, read, stat, rename, delete, list";

    /// The operation's name in `--mix` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Write => "write",
            Op::Read => "read",
            Op::Stat => "stat",
            Op::Rename => "rename",
            Op::Delete => "delete",
            Op::List => "list",
        }
    }

    /// Its index in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether it needs an existing file of the worker's.
    pub fn needs_file(self) -> bool {
        !matches!(self, Op::Create | Op::List)
    }
}

/// Relative weights of the operations (a weight of 0 leaves one out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    weights: [u32; 7],
    total: u64,
}

impl Default for Mix {
    /// create=10,write=10,read=30,stat=30,rename=5,delete=10,list=5.
    fn default() -> Mix {
        Mix::from_weights([10, 10, 30, 30, 5, 10, 5]).expect("non-zero")
    }
}

impl Mix {
    /// A mix of these weights, in [`Op::ALL`]'s order; None if all are 0.
    pub fn from_weights(weights: [u32; 7]) -> Option<Mix> {
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        (total > 0).then_some(Mix { weights, total })
    }

    /// Parse `op=weight,...` (ops left out weigh 0). The error is one line
    /// naming `--mix`, the value and the allowed operations.
    pub fn parse(s: &str) -> Result<Mix, String> {
        let bad = |why: String| format!("invalid --mix \"{s}\": {why}");
        let mut weights = [0u32; 7];
        let mut seen = [false; 7];
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, w) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("\"{item}\" is not op=weight (ops: {})", Op::NAMES)))?;
            let op = Op::ALL
                .into_iter()
                .find(|o| o.name() == name.trim())
                .ok_or_else(|| {
                    bad(format!(
                        "unknown operation \"{}\" (allowed: {})",
                        name.trim(),
                        Op::NAMES
                    ))
                })?;
            if seen[op.index()] {
                return Err(bad(format!("{} is given twice", op.name())));
            }
            seen[op.index()] = true;
            weights[op.index()] = w
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&w| w <= 1_000_000)
                .ok_or_else(|| {
                    bad(format!(
                        "invalid weight \"{}\" for {} (allowed: a whole number 0..=1000000)",
                        w.trim(),
                        op.name()
                    ))
                })?;
        }
        Mix::from_weights(weights).ok_or_else(|| {
            bad(format!(
                "every weight is 0 (give at least one of {} a weight above 0)",
                Op::NAMES
            ))
        })
    }

    /// The weight of `op`.
    pub fn weight(&self, op: Op) -> u32 {
        self.weights[op.index()]
    }

    /// The sum of the weights (above 0).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The operation a draw `r` in `0..total()` picks: each operation owns
    /// a run of draws as long as its weight, in [`Op::ALL`]'s order.
    pub fn pick(&self, r: u64) -> Op {
        let mut left = r % self.total;
        for op in Op::ALL {
            let w = self.weights[op.index()] as u64;
            if left < w {
                return op;
            }
            left -= w;
        }
        unreachable!("r % total falls inside the weights")
    }

    /// What to run when the draw is `op` and the worker holds `files`
    /// files: an operation on a file needs one, so with none it creates one.
    pub fn feasible(op: Op, files: usize) -> Op {
        if op.needs_file() && files == 0 {
            Op::Create
        } else {
            op
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Op::ALL
            .iter()
            .filter(|o| self.weight(**o) > 0)
            .map(|o| format!("{}={}", o.name(), self.weight(*o)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::pattern::Rng;

    #[test]
    fn parses_weights_and_prints_them_back() {
        let m = Mix::parse("read=3, create=1,delete=0").unwrap();
        assert_eq!(m.weight(Op::Read), 3);
        assert_eq!(m.weight(Op::Create), 1);
        assert_eq!(m.weight(Op::Stat), 0);
        assert_eq!(m.total(), 4);
        assert_eq!(m.to_string(), "create=1,read=3");
        assert_eq!(Mix::parse(&m.to_string()).unwrap(), m);
        assert_eq!(
            Mix::parse(&Mix::default().to_string()).unwrap(),
            Mix::default()
        );
    }

    #[test]
    fn bad_mixes_name_the_option_and_the_allowed_values() {
        for (bad, says) in [
            (
                "create=1,chmod=2",
                "unknown operation \"chmod\" (allowed: create, write, read, stat, rename, delete, list)",
            ),
            ("read", "\"read\" is not op=weight"),
            ("read=x", "invalid weight \"x\" for read"),
            ("read=-1", "invalid weight \"-1\" for read"),
            ("read=1,read=2", "read is given twice"),
            ("read=0", "every weight is 0"),
            ("", "every weight is 0"),
        ] {
            let e = Mix::parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("invalid --mix \"{bad}\": ")), "{e}");
            assert!(e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn the_chooser_follows_the_weights() {
        let m = Mix::parse("create=1,read=2,list=1").unwrap();
        let picks: Vec<Op> = (0..4).map(|r| m.pick(r)).collect();
        assert_eq!(picks, [Op::Create, Op::Read, Op::Read, Op::List]);
        assert_eq!(m.pick(4), Op::Create, "draws wrap around the total");
        // Over many random draws each share is near its weight, and an
        // operation of weight 0 never comes up.
        let mut rng = Rng::new(7);
        let mut n = [0u64; 7];
        let draws = 40_000;
        for _ in 0..draws {
            n[m.pick(rng.below(m.total())).index()] += 1;
        }
        assert_eq!(n[Op::Stat.index()] + n[Op::Write.index()], 0);
        for (op, share) in [(Op::Create, 0.25), (Op::Read, 0.5), (Op::List, 0.25)] {
            let got = n[op.index()] as f64 / draws as f64;
            assert!((got - share).abs() < 0.02, "{op:?}: {got}");
        }
    }

    #[test]
    fn an_operation_on_a_file_with_no_file_creates_one() {
        for op in Op::ALL {
            let with_none = Mix::feasible(op, 0);
            if op.needs_file() {
                assert_eq!(with_none, Op::Create, "{op:?}");
            } else {
                assert_eq!(with_none, op);
            }
            assert_eq!(Mix::feasible(op, 1), op);
        }
    }
}
