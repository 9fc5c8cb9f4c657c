//! How the reports write figures: the table of text cells every format
//! renders, numbers to about four significant digits, a cell with its
//! confidence interval, a relative figure, and CSV quoting.

use super::relative::Cell;

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

/// A number with about four significant digits, for tables.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A cell as text: "mean ±ci" (the interval only with repeats).
pub fn fmt_cell(cell: &Cell) -> String {
    match cell.est.ci95 {
        Some(ci) => format!("{} ±{}", fmt_num(cell.est.mean), fmt_num(ci)),
        None => fmt_num(cell.est.mean),
    }
}

/// A relative figure as text: "112" (and "≈" when within noise).
pub fn fmt_relative(cell: &Cell) -> String {
    match cell.relative {
        Some(r) => {
            let noise = if cell.within_noise == Some(true) {
                " ≈"
            } else {
                ""
            };
            format!("{r:.0}{noise}")
        }
        None => "–".into(),
    }
}

/// Quote a CSV field if it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
