//! fio's iolog, versions 2 and 3 (fio's `read_iolog`/`write_iolog` files), one
//! line at a time.
//!
//! Version 2 (first line `fio version 2 iolog`): `FILENAME ACTION` for the file
//! actions `add`, `open` and `close`, and `FILENAME ACTION OFFSET LENGTH` for
//! the I/O actions `read`, `write`, `trim`, `sync`, `datasync` (the last two
//! may leave out the offset and length) and `wait`, whose OFFSET is a pause in
//! microseconds after the previous line (fio's HOWTO); a version 2 trace has
//! no other timing, so the I/Os between two waits are all due at once.
//!
//! Version 3 (first line `fio version 3 iolog`): the same lines, each with a
//! leading timestamp in microseconds since the trace began (fio writes it with
//! its microsecond clock); `wait` is not allowed, the timestamps give the timing.

use super::{Action, Line, number};
use crate::workload::Dir;

/// The first line of a version 2 iolog.
pub const V2_HEADER: &str = "fio version 2 iolog";
/// The first line of a version 3 iolog.
pub const V3_HEADER: &str = "fio version 3 iolog";

/// Every action an iolog line may name.
const ACTIONS: &str = "add, open, close, read, write, sync, datasync, trim, wait";

/// Parse one line of a version 2 (`v3` false) or version 3 iolog. `Ok(None)`:
/// a blank line. `Err` says what is wrong with it, in a few words.
pub fn parse(text: &str, v3: bool) -> Result<Option<Line<'_>>, String> {
    let mut f = text.split_whitespace();
    let Some(first) = f.next() else {
        return Ok(None);
    };
    let (at_ns, device) = if v3 {
        let us: u64 = number("timestamp", first)?;
        let device = f.next().ok_or(
            "a timestamp and nothing else (expected TIMESTAMP FILENAME ACTION [OFFSET LENGTH])",
        )?;
        (Some(us.saturating_mul(1000)), device)
    } else {
        (None, first)
    };
    let action = f
        .next()
        .ok_or_else(|| format!("no action after {device:?} (allowed: {ACTIONS})"))?;
    let rest: Vec<&str> = f.collect();
    let action = match action {
        "add" | "open" | "close" => {
            if let Some(extra) = rest.first() {
                return Err(format!(
                    "{action} takes no offset or length, found {extra:?}"
                ));
            }
            Action::File
        }
        "read" | "write" | "trim" => {
            let (offset, len) = extent(action, &rest, true)?.unwrap_or((0, 0));
            match action {
                "read" => Action::Io(Dir::Read, offset, len),
                "write" => Action::Io(Dir::Write, offset, len),
                _ => Action::Trim,
            }
        }
        "sync" | "datasync" => {
            extent(action, &rest, false)?;
            Action::Sync
        }
        "wait" if v3 => {
            return Err(
                "wait is not allowed in a version 3 iolog (its timestamps give the timing)".into(),
            );
        }
        "wait" => {
            let us: u64 = match rest.first() {
                Some(v) => number("wait", v)?,
                None => return Err("wait needs a time in microseconds".into()),
            };
            if let Some(extra) = rest.get(2) {
                return Err(format!("unexpected {extra:?} after the wait's length"));
            }
            Action::Wait(us.saturating_mul(1000))
        }
        other => return Err(format!("action {other:?} is not one of {ACTIONS}")),
    };
    Ok(Some(Line {
        at_ns,
        device,
        action,
    }))
}

/// The `OFFSET LENGTH` of an I/O action (`needed`: they must be there).
fn extent(action: &str, rest: &[&str], needed: bool) -> Result<Option<(u64, u32)>, String> {
    match rest {
        [] if !needed => Ok(None),
        [] | [_] => Err(format!("{action} needs an offset and a length")),
        [offset, len, extra @ ..] => {
            if let Some(extra) = extra.first() {
                return Err(format!("unexpected {extra:?} after the length"));
            }
            let offset: u64 = number("offset", offset)?;
            let len: u64 = number("length", len)?;
            if needed && len == 0 {
                return Err(format!("{action} of length 0"));
            }
            let len = u32::try_from(len).map_err(|_| format!("length {len} is too large"))?;
            Ok(Some((offset, len)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str, v3: bool) -> Line<'_> {
        parse(text, v3).unwrap().unwrap()
    }

    fn err(text: &str, v3: bool) -> String {
        parse(text, v3).unwrap_err()
    }

    #[test]
    fn version_2_lines() {
        let l = ok("/dev/sdb read 4096 512", false);
        assert_eq!(l.device, "/dev/sdb");
        assert_eq!(l.at_ns, None);
        assert_eq!(l.action, Action::Io(Dir::Read, 4096, 512));
        assert_eq!(
            ok("f write 0 65536", false).action,
            Action::Io(Dir::Write, 0, 65536)
        );
        assert_eq!(ok("f trim 0 4096", false).action, Action::Trim);
        assert_eq!(ok("f sync 0 0", false).action, Action::Sync);
        assert_eq!(ok("f datasync", false).action, Action::Sync);
        for a in ["add", "open", "close"] {
            assert_eq!(ok(&format!("f {a}"), false).action, Action::File);
        }
        // A wait is microseconds after the previous line.
        assert_eq!(ok("f wait 1500 0", false).action, Action::Wait(1_500_000));
        assert_eq!(ok("f wait 7", false).action, Action::Wait(7_000));
        assert!(parse("   ", false).unwrap().is_none());
    }

    #[test]
    fn version_3_lines() {
        let l = ok("872 Nvme1n1 write 8192 16384", true);
        assert_eq!(l.at_ns, Some(872_000));
        assert_eq!(l.device, "Nvme1n1");
        assert_eq!(l.action, Action::Io(Dir::Write, 8192, 16384));
        assert_eq!(ok("2 Nvme1n1 add", true).action, Action::File);
        assert_eq!(ok("10 f sync", true).action, Action::Sync);
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        assert_eq!(
            err("f read x12 4096", false),
            "offset \"x12\" is not a number"
        );
        assert_eq!(err("f read 0 4k", false), "length \"4k\" is not a number");
        assert_eq!(err("f read 0", false), "read needs an offset and a length");
        assert_eq!(err("f write", false), "write needs an offset and a length");
        assert_eq!(err("f read 0 0", false), "read of length 0");
        assert_eq!(
            err("f read 0 8589934592", false),
            "length 8589934592 is too large"
        );
        assert_eq!(
            err("f read 0 512 9", false),
            "unexpected \"9\" after the length"
        );
        assert_eq!(
            err("f open 0 512", false),
            "open takes no offset or length, found \"0\""
        );
        assert!(err("f fsync 0 0", false).starts_with("action \"fsync\" is not one of add, open"));
        assert_eq!(
            err("f", false),
            "no action after \"f\" (allowed: add, open, close, read, write, sync, datasync, trim, wait)"
        );
        assert_eq!(err("f wait", false), "wait needs a time in microseconds");
        assert_eq!(err("f wait -5 0", false), "wait \"-5\" is not a number");
        // Version 3: the timestamp first, and no wait.
        assert_eq!(err("f read 0 512", true), "timestamp \"f\" is not a number");
        assert!(err("12", true).starts_with("a timestamp and nothing else"));
        assert!(
            err("12 f wait 100 0", true).starts_with("wait is not allowed in a version 3 iolog")
        );
    }
}
