//! How the outputs lay figures out: the table of text cells every format
//! renders, as aligned plain text or as Markdown, numbers to about four
//! significant digits, and CSV quoting. What a figure is called and in which
//! unit is [`super::vocab`]'s business; this module only writes text.

use std::fmt::Write;

/// A table of text cells: a title, a header and rows.
#[derive(Clone, Debug, PartialEq)]
pub struct TextTable {
    /// Title shown above it.
    pub title: String,
    /// Column names.
    pub head: Vec<String>,
    /// Rows of cells (as many as `head`).
    pub rows: Vec<Vec<String>>,
    /// A note under the table.
    pub note: String,
}

/// The civil date (year, month 1-12, day 1-31) of a count of days since
/// 1970-01-01 (Howard Hinnant's algorithm), for the formats that print times.
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Seconds into a day as "HH:MM:SS".
pub fn clock_time(secs: u64) -> String {
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// A number with about four significant digits, for tables: no decimals from
/// 1000 up, three below 10; nothing at all is "0".
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// [`fmt_num`], but four significant digits below 1 too (a null target's
/// latency is a fraction of a microsecond, in ms): for figures set side by
/// side to be told apart, as the diff's old and new values.
pub fn fmt_precise(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1.0 || !a.is_finite() {
        return fmt_num(v);
    }
    let digits = (3 - a.log10().floor() as i32).clamp(3, 12) as usize;
    format!("{v:.digits$}")
}

/// Quote a CSV field if it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A CSV document: its header line, then one line per row.
pub fn csv_doc(header: &str, rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = format!("{header}\n");
    for r in rows {
        out.push_str(&csv_line(&r));
    }
    out
}

/// One CSV line: the fields, each quoted if it needs it, and a newline.
fn csv_line(fields: &[String]) -> String {
    let mut out = fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

/// An optional number to `prec` decimals; empty when absent.
pub fn opt_num(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}")).unwrap_or_default()
}

/// Rows as aligned plain text: columns two spaces apart, each line after
/// `indent`, column `i` left-aligned when `left(i)`, else right-aligned;
/// trailing blanks trimmed.
pub fn aligned(
    head: &[String],
    rows: &[Vec<String>],
    indent: &str,
    left: impl Fn(usize) -> bool,
) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(w.len()) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::from(indent);
        for (i, c) in r.iter().enumerate().take(w.len()) {
            if i > 0 {
                line.push_str("  ");
            }
            let _ = if left(i) {
                write!(line, "{c:<width$}", width = w[i])
            } else {
                write!(line, "{c:>width$}", width = w[i])
            };
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A Markdown cell: pipes escaped, on one line.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Rows as a Markdown table; column `i` right-aligned when `right(i)`.
pub fn md_rows(head: &[String], rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| md_cell(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(head);
    out.push('|');
    for i in 0..head.len() {
        out.push_str(if right(i) { " ---: |" } else { " --- |" });
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn numbers_keep_about_four_digits() {
        assert_eq!(fmt_num(3983.5), "3984");
        assert_eq!(fmt_num(512.34), "512.3");
        assert_eq!(fmt_num(22.567), "22.57");
        assert_eq!(fmt_num(0.93), "0.930");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_precise(0.0012346), "0.001235");
        assert_eq!(fmt_precise(22.567), "22.57");
    }

    #[test]
    fn tables_align_and_escape() {
        let head = strings(&["name", "IOPS"]);
        let rows = vec![strings(&["a", "1"]), strings(&["long name", "12345"])];
        assert_eq!(
            aligned(&head, &rows, "  ", |i| i == 0),
            "  name        IOPS\n  a              1\n  long name  12345\n"
        );
        let md = md_rows(&head, &[strings(&["a|b", "1"])], |i| i > 0);
        assert_eq!(md, "| name | IOPS |\n| --- | ---: |\n| a\\|b | 1 |\n");
    }
}
