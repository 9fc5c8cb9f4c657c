//! blkparse's default text output, one line at a time:
//!
//! ```text
//!   8,0    1        1     0.000000000  4162  Q  WS 3417048 + 8 [kjournald]
//!   DEV   CPU  SEQUENCE   SECONDS       PID ACT RWBS SECTOR + SECTORS [PROCESS]
//! ```
//!
//! storlab replays the **Q** (queued) events: the I/O as its submitter
//! issued it, before the elevator merged or split it and before the traced
//! device's own queue held it back. The D (issued) events' times already hold
//! that device's queueing, which a replay on another target would count
//! twice; every other event (G, I, D, C, M, P, U, m, ...) is passed over.
//!
//! The RWBS field names the request: `D` a discard (a trim), `R` a read, `W`
//! a write (`S` sync, `F` flush or FUA, `M` metadata, `A` read-ahead are
//! modifiers); one with no data (`N`, a lone flush, `+ 0`) is a sync. Sectors
//! are 512 bytes. The summary blkparse prints after the events (from the
//! first `CPU0 (8,0):` or `Total (8,0):` line) ends the events.

use super::{Action, Line, number};
use crate::workload::Dir;

/// Bytes per sector in blkparse's output.
pub const SECTOR: u64 = 512;

/// What a line holds once it is parsed.
#[derive(Debug, PartialEq)]
pub enum Parsed<'a> {
    /// An event line (or a blank one, `None`).
    Event(Option<Line<'a>>),
    /// The summary's first line: no events follow.
    Summary,
}

/// Whether `text` reads as a blkparse event line (its first field `MAJ,MIN`).
pub fn looks_like(text: &str) -> bool {
    text.split_whitespace().next().is_some_and(is_device)
}

fn is_device(s: &str) -> bool {
    match s.split_once(',') {
        Some((maj, min)) => {
            let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            digits(maj) && digits(min)
        }
        None => false,
    }
}

/// Parse one line. `Err` says what is wrong with it, in a few words.
pub fn parse(text: &str) -> Result<Parsed<'_>, String> {
    let f: Vec<&str> = text.split_whitespace().collect();
    let Some(&first) = f.first() else {
        return Ok(Parsed::Event(None));
    };
    if !is_device(first) {
        if (first.starts_with("CPU") || first == "Total")
            && f.get(1).is_some_and(|s| s.starts_with('('))
        {
            return Ok(Parsed::Summary);
        }
        return Err(format!(
            "{first:?} is not a device (expected a blkparse event line: MAJ,MIN CPU SEQUENCE SECONDS PID ACTION RWBS SECTOR + SECTORS)"
        ));
    }
    if f.len() < 6 {
        return Err(format!(
            "{} fields, fewer than an event line's 6 (MAJ,MIN CPU SEQUENCE SECONDS PID ACTION)",
            f.len()
        ));
    }
    if f[5] != "Q" {
        return Ok(Parsed::Event(None));
    }
    let at_ns = seconds(f[3])?;
    let rwbs = *f.get(6).ok_or("a Q event without its RWBS field")?;
    if !rwbs.bytes().all(|b| b"RWDFSMAN".contains(&b)) || rwbs.is_empty() {
        return Err(format!(
            "RWBS field {rwbs:?} has letters other than R, W, D, F, S, M, A, N"
        ));
    }
    let extent = match f.get(7) {
        None => None,
        Some(p) if p.starts_with('[') => None,
        Some(sector) => {
            let sector: u64 = number("sector", sector)?;
            if f.get(8) != Some(&"+") {
                return Err(format!(
                    "expected \"+ SECTORS\" after sector {sector}, found {:?}",
                    f.get(8).copied().unwrap_or("the end of the line")
                ));
            }
            let n: u64 = number(
                "sector count",
                f.get(9).ok_or("no sector count after \"+\"")?,
            )?;
            Some((sector, n))
        }
    };
    let action = match extent {
        Some((sector, n)) if n > 0 => {
            let offset = sector
                .checked_mul(SECTOR)
                .ok_or_else(|| format!("sector {sector} is past the largest offset"))?;
            let len = (n.checked_mul(SECTOR))
                .and_then(|b| u32::try_from(b).ok())
                .ok_or_else(|| format!("{n} sectors is too large an I/O"))?;
            if rwbs.contains('D') {
                Action::Trim
            } else if rwbs.contains('R') {
                Action::Io(Dir::Read, offset, len)
            } else if rwbs.contains('W') {
                Action::Io(Dir::Write, offset, len)
            } else {
                Action::Sync
            }
        }
        _ => Action::Sync,
    };
    Ok(Parsed::Event(Some(Line {
        at_ns: Some(at_ns),
        device: f[0],
        action,
    })))
}

/// `SECONDS.NANOSECONDS` as nanoseconds.
fn seconds(s: &str) -> Result<u64, String> {
    let bad = || format!("time {s:?} is not a number of seconds");
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let whole: u64 = whole.parse().map_err(|_| bad())?;
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32)
    };
    whole
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(frac))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(text: &str) -> Option<Line<'_>> {
        match parse(text).unwrap() {
            Parsed::Event(e) => e,
            Parsed::Summary => panic!("{text:?} read as the summary"),
        }
    }

    #[test]
    fn queue_events_are_ios() {
        let l = event("  8,0    1        1     0.000000000  4162  Q  WS 3417048 + 8 [kjournald]")
            .unwrap();
        assert_eq!(l.device, "8,0");
        assert_eq!(l.at_ns, Some(0));
        assert_eq!(l.action, Action::Io(Dir::Write, 3417048 * 512, 4096));
        let l = event("253,1  0  17  12.000250431  99  Q  RA 2048 + 256 [dd]").unwrap();
        assert_eq!(l.at_ns, Some(12_000_250_431));
        assert_eq!(l.action, Action::Io(Dir::Read, 2048 * 512, 256 * 512));
        assert_eq!(
            event("8,16 0 3 1.5 7 Q DS 0 + 2048 [fstrim]")
                .unwrap()
                .action,
            Action::Trim
        );
        assert_eq!(
            event("8,16 0 3 1.5 7 Q FWS [kworker]").unwrap().action,
            Action::Sync
        );
        assert_eq!(
            event("8,16 0 3 1.5 7 Q N 0 + 0 [x]").unwrap().action,
            Action::Sync
        );
        assert_eq!(
            event("8,16 0 3 1.5 7 Q FWS 0 + 0 [x]").unwrap().action,
            Action::Sync
        );
    }

    #[test]
    fn other_events_and_the_summary_are_passed_over() {
        for text in [
            "  8,0    1        2     0.000002000  4162  G  WS 3417048 + 8 [kjournald]",
            "  8,0    1        3     0.000004000  4162  D  WS 3417048 + 8 [kjournald]",
            "  8,0    1        4     0.000090000     0  C  WS 3417048 + 8 [0]",
            "  8,0    1        5     0.000004000  4162  P   N [kjournald]",
            "  8,0    1        0     0.000004000     0  m   N cfq4162 insert_request",
            "",
        ] {
            assert_eq!(event(text), None, "{text:?}");
        }
        assert_eq!(parse("CPU1 (8,0):").unwrap(), Parsed::Summary);
        assert_eq!(parse("Total (8,0):").unwrap(), Parsed::Summary);
        assert!(looks_like("  8,0 1 1 0.0 1 Q R 0 + 8 [x]"));
        assert!(!looks_like("fio version 2 iolog"));
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let err = |t: &str| parse(t).unwrap_err();
        assert_eq!(
            err("8,0 1 1 0.1 1 Q W x12 + 8 [a]"),
            "sector \"x12\" is not a number"
        );
        assert_eq!(
            err("8,0 1 1 0.1 1 Q W 12 - 8 [a]"),
            "expected \"+ SECTORS\" after sector 12, found \"-\""
        );
        assert_eq!(err("8,0 1 1 0.1 1 Q W 12 +"), "no sector count after \"+\"");
        assert_eq!(
            err("8,0 1 1 0.1 1 Q W 12 + eight [a]"),
            "sector count \"eight\" is not a number"
        );
        assert_eq!(
            err("8,0 1 1 zero 1 Q W 12 + 8 [a]"),
            "time \"zero\" is not a number of seconds"
        );
        assert_eq!(
            err("8,0 1 1 0.1234567890 1 Q W 12 + 8 [a]"),
            "time \"0.1234567890\" is not a number of seconds"
        );
        assert!(err("8,0 1 1 0.1 1 Q X 12 + 8 [a]").starts_with("RWBS field \"X\""));
        assert_eq!(
            err("8,0 1 1 0.1 1 Q R 12 + 36028797018963968 [a]"),
            "36028797018963968 sectors is too large an I/O"
        );
        assert!(err("8,0 1 1 0.1").starts_with("4 fields"));
        assert!(err("hello world").starts_with("\"hello\" is not a device"));
    }
}
