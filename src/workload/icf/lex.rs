//! The shape of an Iometer configuration file (.icf): a `Version` line, then
//! keys (lines starting with `'`) each followed by its value lines (usually
//! tab-indented). A `'` line whose text starts with white space is a column
//! header for the key above it ("'\thours minutes seconds"), not a key.

use super::super::validate::SpecError;

/// One key and its value lines, each with its line number (from 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key without its `'`, trimmed ("Run Time", "END test setup").
    pub key: String,
    /// Line of the key.
    pub line: usize,
    /// Non-empty value lines, trimmed.
    pub values: Vec<(usize, String)>,
}

impl Entry {
    /// The first value line's text, or "" when it has none.
    pub fn first(&self) -> &str {
        self.values.first().map_or("", |(_, v)| v.as_str())
    }

    /// The line of the first value (else the key's).
    pub fn value_line(&self) -> usize {
        self.values.first().map_or(self.line, |(l, _)| *l)
    }
}

/// The version and entries of .icf text; `origin` names the file in errors.
pub fn entries(text: &str, origin: &str) -> Result<(String, Vec<Entry>), SpecError> {
    let mut lines = text.lines().enumerate();
    let version = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .and_then(|(_, l)| {
            l.trim()
                .strip_prefix("Version ")
                .map(|v| v.trim().to_string())
        })
        .ok_or_else(|| {
            SpecError::invalid(
                "first line",
                text.lines().next().unwrap_or("(empty file)"),
                "Version N (an Iometer configuration file saved by Iometer)",
            )
            .context(format!("{origin}, line 1"))
        })?;
    let mut out: Vec<Entry> = Vec::new();
    for (i, raw) in lines {
        let line = i + 1;
        let t = raw.trim_end_matches(['\r', '\n']);
        if let Some(key) = t.trim_start().strip_prefix('\'') {
            if key.starts_with(char::is_whitespace) {
                continue;
            }
            out.push(Entry {
                key: key.trim().to_string(),
                line,
                values: Vec::new(),
            });
        } else if t.trim().starts_with("Version ") || t.trim().is_empty() {
            // Iometer repeats the version line at the end.
        } else {
            match out.last_mut() {
                Some(e) => e.values.push((line, t.trim().to_string())),
                None => {
                    return Err(
                        SpecError::invalid("value", t.trim(), "a value below a 'KEY line")
                            .context(format!("{origin}, line {line}")),
                    );
                }
            }
        }
    }
    Ok((version, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::assert_starts;

    #[test]
    fn keys_values_and_column_headers() {
        let (v, e) = entries(
            "Version 1.1.0 \n'Run Time\n'\thours minutes seconds\n\t0  5  0\n'Manager network address\n\t\n'END x\nVersion 1.1.0\n",
            "a.icf",
        )
        .unwrap();
        assert_eq!(v, "1.1.0");
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].key.as_str(), e[0].first(), e[0].value_line()),
            ("Run Time", "0  5  0", 4)
        );
        assert!(e[1].values.is_empty());
        let err = entries("[global]\n", "a.icf").unwrap_err().to_string();
        assert_starts(&err, "a.icf, line 1: invalid first line = [global]");
    }
}
