//! fio's job-file syntax: `[section]` headers and `key=value` (or bare
//! `key`) lines; `;` and `#` start a comment line. Only the syntax: what the
//! options mean is the importer's ([`super`]).

use super::super::validate::SpecError;

/// One option as written, with its line (from 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Opt {
    /// The option's name, lower case as fio matches it.
    pub key: String,
    /// Its value; `None` for a bare flag (`time_based`).
    pub value: Option<String>,
    /// Line number in the file.
    pub line: usize,
}

/// One `[section]` and its options in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// The name between the brackets (`global` is fio's defaults).
    pub name: String,
    /// Line of the header.
    pub line: usize,
    /// Its options.
    pub opts: Vec<Opt>,
}

/// The sections of fio job-file text; `origin` names the file in errors.
/// Every syntax error is reported, one line each.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Section>, Vec<SpecError>> {
    let mut sections: Vec<Section> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let at = || format!("{origin}, line {line}");
        let t = raw.trim();
        if t.is_empty() || t.starts_with(';') || t.starts_with('#') {
            continue;
        }
        if let Some(rest) = t.strip_prefix('[') {
            match rest.strip_suffix(']').map(str::trim) {
                Some(name) if !name.is_empty() => sections.push(Section {
                    name: name.to_string(),
                    line,
                    opts: Vec::new(),
                }),
                _ => errors.push(
                    SpecError::invalid("section header", t, "[NAME], e.g. [global] or [job1]")
                        .context(at()),
                ),
            }
            continue;
        }
        let include = t.split_whitespace().next() == Some("include");
        let (key, value) = match t.split_once('=') {
            _ if include => (
                "include",
                t.strip_prefix("include").map(|v| v.trim().to_string()),
            ),
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (t, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            errors.push(
                SpecError::invalid(
                    "fio option line",
                    t,
                    "key=value or a bare flag such as time_based",
                )
                .context(at()),
            );
            continue;
        }
        if include
            || value
                .as_deref()
                .is_some_and(|v| v.contains("${") || v.contains("$("))
        {
            errors.push(
                SpecError::invalid(
                    key,
                    value.as_deref().unwrap_or(""),
                    "a literal value (storlab does not expand include, ${VAR} or $(expr); write the value out)",
                )
                .context(at()),
            );
            continue;
        }
        match sections.last_mut() {
            Some(s) => s.opts.push(Opt {
                key: key.to_ascii_lowercase(),
                value,
                line,
            }),
            None => errors.push(
                SpecError::invalid(
                    "fio option",
                    key,
                    "options inside a [global] or [job] section",
                )
                .context(at()),
            ),
        }
    }
    if errors.is_empty() {
        Ok(sections)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::assert_starts;

    #[test]
    fn sections_options_and_comments() {
        let s = parse(
            "; comment\n[global]\nbs = 4k\ntime_based\n\n# c\n[ job 1 ]\nrw=read\n",
            "x.fio",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].line), ("global", 2));
        assert_eq!(
            s[0].opts[0],
            Opt {
                key: "bs".into(),
                value: Some("4k".into()),
                line: 3
            }
        );
        assert_eq!(s[0].opts[1].value, None);
        assert_eq!((s[1].name.as_str(), s[1].opts[0].line), ("job 1", 8));
    }

    #[test]
    fn every_syntax_error_is_one_line() {
        let e = parse(
            "bs=4k\n[]\n[a]\nsize=${SIZE}\nfoo bar=1\ninclude x.fio\n",
            "x.fio",
        )
        .unwrap_err();
        let lines: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert_starts(&lines[0], "x.fio, line 1: invalid fio option = bs");
        assert!(lines[1].starts_with("x.fio, line 2: invalid section header = []"));
        assert!(lines[2].starts_with("x.fio, line 4: invalid size = ${SIZE}"));
        assert!(lines[3].starts_with("x.fio, line 5: invalid fio option line"));
        assert!(lines[4].starts_with("x.fio, line 6: invalid include"));
    }
}
