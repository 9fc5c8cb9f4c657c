//! Sizes, durations and percentages as users write them.
//!
//! Sizes use binary multiples throughout: `k`, `K`, `KB` and `KiB` all mean
//! 1024 bytes, `m`/`MB`/`MiB` 1024², and so on up to `p`. This matches fio's
//! default `kb_base=1024` and Iometer's sizes, so a "4k" block is the 4096-byte
//! block every storage study means, and "10 GB" files in a study become 10 GiB.
//!
//! Durations take a bare number as seconds, like fio's `runtime`.

use std::time::Duration;

const SIZE_ALLOWED: &str = "a non-negative number with an optional binary suffix: \
     B, k/KB/KiB, m/MB/MiB, g/GB/GiB, t/TB/TiB, p/PB/PiB (all powers of 1024), e.g. 4k, 1.5GiB";

const DURATION_ALLOWED: &str = "a non-negative number with an optional unit: us, ms, s, m/min, h (bare = seconds), e.g. 300, 10m, 2.5s";

/// A non-negative decimal number split into its integer part and its fraction
/// (`frac / 10^frac_digits`), kept exact so "1.5g" is exactly 1.5 GiB.
struct Decimal {
    int: u128,
    frac: u128,
    scale: u128,
}

impl Decimal {
    fn parse(s: &str) -> Option<Decimal> {
        let (int_s, frac_s) = match s.split_once('.') {
            Some((i, f)) => (i, f),
            None => (s, ""),
        };
        if int_s.is_empty() && frac_s.is_empty() {
            return None;
        }
        let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        // 30 digits keeps every intermediate product inside u128.
        if !digits(int_s) || !digits(frac_s) || int_s.len() > 30 || frac_s.len() > 18 {
            return None;
        }
        let int = if int_s.is_empty() {
            0
        } else {
            int_s.parse().ok()?
        };
        let frac = if frac_s.is_empty() {
            0
        } else {
            frac_s.parse().ok()?
        };
        Some(Decimal {
            int,
            frac,
            scale: 10u128.pow(frac_s.len() as u32),
        })
    }

    /// `self * mult`, rounded to the nearest integer; `None` above `u64::MAX`.
    fn times(&self, mult: u128) -> Option<u64> {
        let whole = self.int.checked_mul(mult)?;
        let part = (self.frac * mult + self.scale / 2) / self.scale;
        u64::try_from(whole.checked_add(part)?).ok()
    }
}

/// Split "1.5GiB" into ("1.5", "GiB"), ignoring spaces around and between;
/// an empty or negative value is `err`'s error.
fn split_number(s: &str, err: impl Fn(&str) -> String) -> Result<(&str, &str), String> {
    let s = s.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    if s.starts_with('-') {
        return Err(err("negative"));
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    Ok((&s[..end], s[end..].trim()))
}

/// Parse a byte size such as "4k", "4KiB", "512", "1.5g" or "3.05GB".
///
/// All suffixes are binary (k = KB = KiB = 1024); fractions are rounded to
/// the nearest byte.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let err = |why: &str| format!("invalid size \"{s}\": {why} (allowed: {SIZE_ALLOWED})");
    let (num, suffix) = split_number(s, err)?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(err(&format!("unknown suffix \"{suffix}\""))),
    };
    let d = Decimal::parse(num).ok_or_else(|| err("not a number"))?;
    d.times(1u128 << shift).ok_or_else(|| err("too large"))
}

/// Parse a duration such as "300" (seconds), "300s", "10m", "1h", "500ms" or "2.5s".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let err = |why: &str| format!("invalid duration \"{s}\": {why} (allowed: {DURATION_ALLOWED})");
    let (num, unit) = split_number(s, err)?;
    let ns_per: u128 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "" | "s" | "sec" | "secs" => 1_000_000_000,
        "m" | "min" | "mins" => 60_000_000_000,
        "h" | "hr" | "hour" | "hours" => 3_600_000_000_000,
        _ => return Err(err(&format!("unknown unit \"{unit}\""))),
    };
    let d = Decimal::parse(num).ok_or_else(|| err("not a number"))?;
    d.times(ns_per)
        .map(Duration::from_nanos)
        .ok_or_else(|| err("too large"))
}

/// Parse a percentage, an integer 0..=100 (a trailing "%" is accepted).
pub fn parse_pct(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<u8>() {
        Ok(v) if v <= 100 => Ok(v),
        _ => Err(format!(
            "invalid percentage \"{s}\" (allowed: an integer 0..=100)"
        )),
    }
}

/// `v / unit` with up to two decimals, trailing zeros dropped ("1.5", "10").
fn fraction(v: u64, unit: u64) -> String {
    let hundredths = (v as u128 * 100 + unit as u128 / 2) / unit as u128;
    let (i, f) = (hundredths / 100, hundredths % 100);
    match f {
        0 => format!("{i}"),
        f if f % 10 == 0 => format!("{i}.{}", f / 10),
        f => format!("{i}.{f:02}"),
    }
}

/// Format a byte count with the largest binary unit it reaches: "512 B", "4 KiB", "1.5 MiB".
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 1024u64;
    let mut name = UNITS[0];
    for (i, n) in UNITS.iter().enumerate().skip(1) {
        let next = 1u64 << (10 * (i + 1));
        if bytes < next {
            break;
        }
        unit = next;
        name = n;
    }
    format!("{} {name}", fraction(bytes, unit))
}

/// Format a duration in its most natural unit: "10 min", "1 h", "5 s", "2.5 s", "300 ms".
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    const S: u128 = 1_000_000_000;
    if ns == 0 {
        return "0 s".to_string();
    }
    if ns % (3600 * S) == 0 {
        return format!("{} h", ns / (3600 * S));
    }
    if ns % (60 * S) == 0 {
        return format!("{} min", ns / (60 * S));
    }
    let v = u64::try_from(ns).unwrap_or(u64::MAX);
    if ns >= S {
        format!("{} s", fraction(v, S as u64))
    } else if ns >= 1_000_000 {
        format!("{} ms", fraction(v, 1_000_000))
    } else if ns >= 1_000 {
        format!("{} µs", fraction(v, 1_000))
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512B"), Ok(512));
        for s in ["4k", "4K", "4KiB", "4KB", "4 kib"] {
            assert_eq!(parse_size(s), Ok(4096), "{s}");
        }
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("3.05GB"), Ok(3_274_912_563));
        assert_eq!(parse_size("1t"), Ok(1 << 40));
        assert_eq!(parse_size("0.5k"), Ok(512));
        assert_eq!(parse_size("16p"), Ok(16 << 50));
    }

    #[test]
    fn bad_sizes() {
        for s in [
            "",
            "  ",
            "-4k",
            "4x",
            "k",
            ".",
            "1.2.3",
            "16384p",
            "99999999999999999999999",
        ] {
            let e = parse_size(s).unwrap_err();
            assert!(e.contains("allowed"), "{s}: {e}");
        }
        assert!(
            parse_size("4q")
                .unwrap_err()
                .contains("unknown suffix \"q\"")
        );
        assert!(parse_size("-1").unwrap_err().contains("negative"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("300s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("10min"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("0.01"), Ok(Duration::from_millis(10)));
        for s in ["", "-1s", "1y", "s", "1..2"] {
            assert!(parse_duration(s).unwrap_err().contains("allowed"), "{s}");
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_pct("0"), Ok(0));
        assert_eq!(parse_pct("75"), Ok(75));
        assert_eq!(parse_pct("100%"), Ok(100));
        for s in ["101", "-1", "", "x", "50.5"] {
            assert!(parse_pct(s).unwrap_err().contains("0..=100"), "{s}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(10 << 30), "10 GiB");
        assert_eq!(format_size(3 << 19), "1.5 MiB");
        assert_eq!(format_size(1 << 40), "1 TiB");
        assert_eq!(format_size(u64::MAX), "16 EiB");
        assert_eq!(format_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(format_duration(Duration::from_secs(5)), "5 s");
        assert_eq!(format_duration(Duration::from_millis(300)), "300 ms");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1 h");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(format_duration(Duration::ZERO), "0 s");
    }

    #[test]
    fn round_trip() {
        for b in [512u64, 4096, 65536, 1 << 20, 10 << 30] {
            let text = format_size(b).replace(' ', "");
            assert_eq!(parse_size(&text), Ok(b), "{text}");
        }
    }
}
