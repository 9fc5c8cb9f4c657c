//! A study's report as one self-contained HTML page (inline CSS and SVG, no
//! script, nothing fetched): the study and its published finding, each
//! section's charts and tables, the lab each run used and the command that
//! reproduces it.

use super::{Results, Section, lab_line};
use crate::report::html::{page_start, table};
use crate::report::markdown::{environment_table, shell_line};
use crate::report::svg::esc;
use std::fmt::Write;

/// The page of `r` with its `sections`.
pub fn render(r: &Results, sections: &[Section]) -> String {
    let s = r.study;
    let mut out = page_start(&format!("storlab study {}: {}", s.number, s.name));
    let _ = write!(
        out,
        "<h1>Study {}: {}</h1><p><b>Published:</b> {}.</p><p>{}.</p>",
        esc(s.number),
        esc(s.title),
        esc(s.finding),
        esc(&lab_line(r))
    );
    for sec in sections {
        let _ = write!(out, "<h2>{}</h2>", esc(&sec.title));
        if !sec.note.is_empty() {
            let _ = write!(out, "<p>{}</p>", esc(&sec.note));
        }
        if !sec.charts.is_empty() {
            // Each chart takes its share of the width, captioned with the
            // labs (medium and link) it was measured on.
            let caption = format!(
                "{}. What bound each point is in the tables below.",
                lab_line(r).trim_end_matches('.')
            );
            out.push_str("<div class=\"charts\">");
            for chart in &sec.charts {
                let _ = write!(
                    out,
                    "<figure class=\"fig\">{chart}<figcaption>{}</figcaption></figure>",
                    esc(&caption)
                );
            }
            out.push_str("</div>");
        }
        for t in &sec.tables {
            let _ = write!(out, "<h3>{}</h3>{}", esc(&t.title), table(t));
        }
    }
    out.push_str("<h2>Lab and environment</h2>");
    for (i, lr) in r.runs.iter().enumerate() {
        if let Some(c) = r.comparison(i) {
            let env = environment_table(&c);
            let _ = write!(out, "<h3>Lab run: {}</h3>{}", esc(lr.name()), table(&env));
        }
    }
    out.push_str("<h2>Reproduce</h2>");
    for lr in &r.runs {
        let _ = write!(
            out,
            "<p>{}:</p><pre>{}</pre>",
            esc(lr.name()),
            esc(&shell_line(&lr.run.command))
        );
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{results, run_of};
    use super::*;
    use crate::study::STUDIES;

    #[test]
    fn every_study_renders_a_self_contained_page() {
        for study in &STUDIES {
            let run = run_of(&[("vsphere-shared-4k", &["32 VMs"], &[("local", 1.0)])]);
            let r = results(study, vec![run]);
            let sections = (study.render)(&r);
            let page = render(&r, &sections);
            assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
            assert!(page.contains(&format!("Study {}", study.number)));
            for bad in ["<script", "https://", "@import", "url("] {
                assert!(!page.contains(bad), "{}: {bad}", study.name);
            }
        }
    }
}
