//! The report as one self-contained HTML page: inline CSS and inline SVG
//! charts, no script, no font or file from the network. Sections: relative
//! bars per figure (baseline = 100), sweep curves with the knee, latency
//! CDFs, the SQLIO 1 ms histogram, per-interval IOPS with the ramp shaded,
//! the tables of [`super::markdown`], the environment and the command to
//! reproduce each run.

use super::format::TextTable;
use super::hosts;
use super::markdown::{self, ReportOptions, key_name, shell_line};
use super::relative::Comparison;
use super::svg::{self, Bar, BarChart, BarGroup, LineChart, Series, esc};
use super::vocab::{Figures, Metric, Unit, gbit_s};
use crate::model::{IntervalRecord, Phase};
use crate::stats::{LatHist, MS_HISTOGRAM_LIMIT, Summary};
use std::fmt::Write;

const PAGE_CSS: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1300px;padding:0 16px;color:#1d1d1d}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px}\
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.note{color:#555;font-size:12px}.charts{display:flex;flex-wrap:wrap;gap:12px}\
figure.fig{flex:1 1 460px;max-width:100%;margin:0}figure.fig .chart{width:100%;height:auto}\
figcaption{color:#555;font-size:12px;margin:2px 4px 0}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto}";

/// The start of a self-contained page titled `title`: its head, with the
/// page's and the charts' CSS inline, and the body's opening tag.
pub fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{}</title>\
         <style>{PAGE_CSS}{}</style></head><body>",
        esc(title),
        svg::CSS
    )
}

/// One table as HTML.
pub fn table(t: &TextTable) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i >= 2 && t.head.len() > 2 {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    if !t.note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&t.note));
    }
    out
}

/// A chart that takes its share of the page's width (the SVG scales from
/// its viewBox), captioned with where its points were measured and what
/// bound them (rows `keys`).
fn figure(c: &Comparison, keys: &[usize], chart: &str) -> String {
    format!(
        "<figure class=\"fig\">{chart}<figcaption>{}</figcaption></figure>",
        esc(&caption(c, keys))
    )
}

/// "Medium array-15k, link 10gbe (MTU 1500). Bound: nfs3 link; iscsi
/// medium ×3, latency." for the points of rows `keys` on every target.
fn caption(c: &Comparison, keys: &[usize]) -> String {
    let on = c.measured_on();
    let mut out = if on.is_empty() {
        "No lab medium or link recorded.".to_string()
    } else {
        let mut s = on;
        if let Some(first) = s.get(..1) {
            s = first.to_uppercase() + &s[1..];
        }
        s + "."
    };
    let mut per_target = Vec::new();
    for (t, target) in c.targets.iter().enumerate() {
        let mut by: Vec<(&str, usize)> = Vec::new();
        let mut machine = false;
        for &k in keys {
            let Some(b) = c.bound(k, t) else { continue };
            machine |= b.machine;
            match by.iter_mut().find(|(n, _)| *n == b.by.as_str()) {
                Some((_, n)) => *n += 1,
                None => by.push((b.by.as_str(), 1)),
            }
        }
        if by.is_empty() {
            continue;
        }
        let list = by
            .iter()
            .map(|(n, count)| {
                if *count > 1 {
                    format!("{n} ×{count}")
                } else {
                    n.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let flag = if machine { " (machine saturated)" } else { "" };
        per_target.push(format!("{target} {list}{flag}"));
    }
    if !per_target.is_empty() {
        let _ = write!(out, " Bound: {}.", per_target.join("; "));
    }
    out
}

/// Relative bars of one figure: a group per row, a bar per target.
fn relative_chart(c: &Comparison, m: Metric) -> String {
    let groups = c
        .table(m)
        .rows
        .iter()
        .map(|r| BarGroup {
            label: r.label.clone(),
            bars: r
                .cells
                .iter()
                .enumerate()
                .filter_map(|(t, cell)| {
                    let cell = cell.as_ref()?;
                    let rel = cell.relative?;
                    let scale = rel / cell.est.mean.max(f64::MIN_POSITIVE);
                    let noise = if cell.within_noise == Some(true) {
                        ", within noise"
                    } else {
                        ""
                    };
                    Some(Bar {
                        series: t,
                        value: rel,
                        tip: format!(
                            "{} · {} · {}: {} {} (n={}), {rel:.0} relative{noise}",
                            r.job,
                            r.label,
                            c.targets[t],
                            cell.fmt(m),
                            m.name(),
                            cell.est.n
                        ),
                        err: cell.est.ci95.map(|ci| ci * scale),
                    })
                })
                .collect(),
        })
        .collect();
    svg::bar_chart(&BarChart {
        title: format!("{} relative to {} = 100", m.name(), c.baseline_name()),
        y_label: format!("{} (baseline = 100)", m.name()),
        series: c.targets.clone(),
        groups,
        reference: Some(100.0),
    })
}

/// IOPS against mean latency per target for every sweep, knee marked.
fn sweep_charts(c: &Comparison, opts: &ReportOptions) -> String {
    let mut out = String::new();
    for s in c.curves() {
        let mut marks = Vec::new();
        let series = s
            .curves
            .iter()
            .map(|curve| {
                if let Some(k) = curve.knee() {
                    let p = &curve.points[k];
                    marks.push((
                        p.iops,
                        p.mean_ms,
                        curve.target,
                        format!(
                            "knee of {}: {} at {}",
                            c.targets[curve.target],
                            p.label,
                            Unit::Iops.show(p.iops)
                        ),
                    ));
                }
                Series {
                    name: c.targets[curve.target].clone(),
                    colour: curve.target,
                    points: curve.points.iter().map(|p| (p.iops, p.mean_ms)).collect(),
                    tips: curve
                        .points
                        .iter()
                        .map(|p| {
                            format!(
                                "{}: {}, mean {}, p99 {}",
                                p.label,
                                Unit::Iops.show(p.iops),
                                Unit::Ms.show(p.mean_ms),
                                Unit::Ms.show(p.p99_ms)
                            )
                        })
                        .collect(),
                    dots: true,
                }
            })
            .collect();
        let keys: Vec<usize> = (0..c.keys.len())
            .filter(|&k| c.keys[k].0 == s.job)
            .collect();
        let chart = svg::line_chart(&LineChart {
            title: format!("{}: IOPS vs mean latency", s.job),
            x_label: Metric::Iops.name().into(),
            y_label: Metric::LatMean.name().into(),
            log_x: false,
            series,
            bands: Vec::new(),
            marks,
            hline: None,
        });
        out.push_str(&figure(c, &keys, &chart));
        let _ = opts;
    }
    out
}

/// Merged latency of every repeat of key `k` on target `t`.
fn latency(c: &Comparison, k: usize, t: usize) -> LatHist {
    c.points(k, t).iter().map(|p| p.measured.total_lat()).sum()
}

/// Latency CDF overlay of one row.
fn cdf_chart(c: &Comparison, k: usize) -> String {
    let (job, label) = &c.keys[k];
    let series = (0..c.targets.len())
        .filter_map(|t| {
            let h = latency(c, k, t);
            if h.is_empty() {
                return None;
            }
            let points: Vec<(f64, f64)> = h
                .cdf_points()
                .iter()
                .map(|&(ns, f)| (ns as f64 / 1e6, f * 100.0))
                .collect();
            Some(Series {
                name: c.targets[t].clone(),
                colour: t,
                points,
                tips: Vec::new(),
                dots: false,
            })
        })
        .collect();
    svg::line_chart(&LineChart {
        title: format!("{}: latency CDF", key_name(job, label)),
        x_label: "latency (ms, log scale)".into(),
        y_label: "% of I/Os at or below".into(),
        log_x: true,
        series,
        bands: Vec::new(),
        marks: Vec::new(),
        hline: None,
    })
}

/// SQLIO-style 1 ms histogram of one row, a bar per target.
fn ms_histogram_chart(c: &Comparison, k: usize) -> String {
    let (job, label) = &c.keys[k];
    let hists: Vec<(usize, Vec<u64>)> = (0..c.targets.len())
        .map(|t| (t, latency(c, k, t).ms_buckets(MS_HISTOGRAM_LIMIT)))
        .filter(|(_, h)| h.iter().sum::<u64>() > 0)
        .collect();
    let groups = (0..=MS_HISTOGRAM_LIMIT as usize)
        .map(|b| BarGroup {
            label: if b == MS_HISTOGRAM_LIMIT as usize {
                format!("{b}+")
            } else {
                b.to_string()
            },
            bars: hists
                .iter()
                .map(|(t, h)| {
                    let total: u64 = h.iter().sum();
                    let pct = h[b] as f64 * 100.0 / total as f64;
                    Bar {
                        series: *t,
                        value: pct,
                        tip: format!("{}: {} I/Os ({pct:.2}%) in {b} ms", c.targets[*t], h[b]),
                        err: None,
                    }
                })
                .collect(),
        })
        .collect();
    svg::bar_chart(&BarChart {
        title: format!("{}: latency histogram, 1 ms buckets", key_name(job, label)),
        y_label: "% of I/Os".into(),
        series: c.targets.clone(),
        groups,
        reference: None,
    })
}

/// A shaded span of a line chart: (from, to, what it is).
type Band = (f64, f64, String);

/// The ramp of a point's intervals as a shaded band; `None` without a ramp.
fn ramp_band(intervals: &[IntervalRecord]) -> Option<Band> {
    let end = intervals
        .iter()
        .filter(|i| i.phase == Phase::Ramp)
        .map(|i| i.start_s + i.seconds)
        .fold(0.0, f64::max);
    (end > 0.0).then(|| (0.0, end, format!("ramp: 0–{end:.1} s, not in the summary")))
}

/// One point in time of an interval line: the interval, its end in seconds
/// since the point started, its own summary, the figure's value.
struct IntervalPoint<'a> {
    interval: &'a IntervalRecord,
    end: f64,
    summary: Summary,
    value: f64,
}

/// One line of figure `m` over `intervals` (those that have it), dotted,
/// each dot's tip from `tip`; with the ramp's band.
fn interval_line(
    name: String,
    colour: usize,
    intervals: &[IntervalRecord],
    m: Metric,
    tip: impl Fn(&IntervalPoint) -> String,
) -> (Series, Option<Band>) {
    let pts: Vec<IntervalPoint> = intervals
        .iter()
        .filter_map(|i| {
            let summary = i.summary();
            let value = m.value(&Figures::of(&summary))?;
            Some(IntervalPoint {
                interval: i,
                end: i.start_s + i.seconds,
                summary,
                value,
            })
        })
        .collect();
    let series = Series {
        name,
        colour,
        points: pts.iter().map(|p| (p.end, p.value)).collect(),
        tips: pts.iter().map(tip).collect(),
        dots: true,
    };
    (series, ramp_band(intervals))
}

/// A chart of one figure per interval against time: a line per series,
/// the first ramp shaded.
fn interval_chart(
    title: String,
    m: Metric,
    series: Vec<(Series, Option<Band>)>,
    hline: Option<(f64, String)>,
) -> String {
    let bands = series
        .iter()
        .find_map(|(_, b)| b.clone())
        .into_iter()
        .collect();
    svg::line_chart(&LineChart {
        title,
        x_label: "seconds since the point started".into(),
        y_label: m.column().into(),
        log_x: false,
        series: series.into_iter().map(|(s, _)| s).collect(),
        bands,
        marks: Vec::new(),
        hline,
    })
}

/// IOPS per interval of one row, per target (first repeat), ramp shaded.
fn time_series_chart(c: &Comparison, k: usize) -> String {
    let (job, label) = &c.keys[k];
    let series = (0..c.targets.len())
        .filter_map(|t| {
            let p = *c.points(k, t).first()?;
            let target = &c.targets[t];
            Some(interval_line(
                target.clone(),
                t,
                &p.intervals,
                Metric::Iops,
                |x| {
                    let phase = match x.interval.phase {
                        Phase::Ramp => "ramp",
                        Phase::Measure => "measure",
                    };
                    format!(
                        "{target} interval {} ({phase}), {:.1} s: {}, mean {}",
                        x.interval.index,
                        x.end,
                        Unit::Iops.show(x.value),
                        Metric::LatMean
                            .value(&Figures::of(&x.summary))
                            .map_or_else(|| "–".into(), |v| Unit::Ms.show(v))
                    )
                },
            ))
        })
        .collect();
    interval_chart(
        format!("{}: IOPS per interval", key_name(job, label)),
        Metric::Iops,
        series,
        None,
    )
}

/// IOPS per interval of every host of one row and target (its first repeat
/// that ran on several hosts), a line per host, ramp shaded.
fn host_chart(c: &Comparison, k: usize, t: usize) -> Option<String> {
    let p = hosts::fleet_point(c, k, t)?;
    let (job, label) = &c.keys[k];
    let series = p
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let lost = if h.lost { " (lost)" } else { "" };
            let name = format!("{}{lost}", h.host);
            interval_line(name, i, &h.intervals, Metric::Iops, |x| {
                format!("{}, {:.1} s: {}", h.host, x.end, Unit::Iops.show(x.value))
            })
        })
        .collect();
    Some(interval_chart(
        format!(
            "{} on {}: IOPS per interval per host",
            key_name(job, label),
            c.targets[t]
        ),
        Metric::Iops,
        series,
        None,
    ))
}

/// Gb/s per interval of one row, per target whose run recorded its link
/// rate (first repeat), against that rate as a dashed line; `None` when no
/// run of the row recorded one.
fn link_chart(c: &Comparison, k: usize) -> Option<String> {
    let (job, label) = &c.keys[k];
    let mut rate: Option<f64> = None;
    let series: Vec<_> = (0..c.targets.len())
        .filter_map(|t| {
            let (src, p) = *c.sourced_points(k, t).first()?;
            let bps = hosts::link_of(&src.run)?.rate_bps.filter(|&r| r > 0)? as f64;
            rate.get_or_insert(gbit_s(bps));
            let target = &c.targets[t];
            Some(interval_line(
                target.clone(),
                t,
                &p.intervals,
                Metric::Gbits,
                |x| {
                    let share = Metric::LinkPct.value(&Figures {
                        link_bps: Some(bps),
                        ..Figures::of(&x.summary)
                    });
                    format!(
                        "{target}, {:.1} s: {}, {} of the link",
                        x.end,
                        Unit::GbitS.show(x.value),
                        Unit::Percent.show(share.unwrap_or(0.0))
                    )
                },
            ))
        })
        .collect();
    let rate = rate?;
    Some(interval_chart(
        format!(
            "{}: Gb/s per interval against the link",
            key_name(job, label)
        ),
        Metric::Gbits,
        series,
        Some((rate, format!("link rate: {}", Unit::GbitS.show(rate)))),
    ))
}

/// The whole report as one HTML page.
pub fn render(c: &Comparison, opts: &ReportOptions) -> String {
    let mut out = page_start("storlab report");
    if !c.has_points() {
        let _ = write!(
            out,
            "<h1>storlab report</h1><p>{}</p>",
            esc(&markdown::runs_line(c))
        );
        out.push_str(&meta_sections(c));
        return end_page(c, out);
    }
    let _ = write!(
        out,
        "<h1>storlab report</h1><p>Runs: {}. Baseline: <b>{}</b> = 100. Targets: {}.</p>",
        esc(&c
            .sources
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")),
        esc(c.baseline_name()),
        esc(&c.targets.join(", "))
    );
    out.push_str("<h2>Relative to the baseline</h2><div class=\"charts\">");
    let all: Vec<usize> = (0..c.keys.len()).collect();
    for m in c.relative_metrics() {
        out.push_str(&figure(c, &all, &relative_chart(c, m)));
    }
    out.push_str("</div>");
    for m in c.metrics() {
        let t = markdown::metric_table(c, m);
        let _ = write!(out, "<h3>{}</h3>{}", esc(&t.title), table(&t));
    }
    let bound = markdown::bound_table(c);
    if !bound.rows.is_empty() {
        let _ = write!(out, "<h2>{}</h2>{}", esc(&bound.title), table(&bound));
    }
    let sweeps = markdown::sweep_table(c, opts);
    if !sweeps.rows.is_empty() {
        out.push_str("<h2>Sweeps</h2><div class=\"charts\">");
        out.push_str(&sweep_charts(c, opts));
        out.push_str("</div>");
        out.push_str(&table(&sweeps));
    }
    out.push_str("<h2>Latency distribution</h2>");
    for k in 0..c.keys.len() {
        out.push_str("<div class=\"charts\">");
        out.push_str(&figure(c, &[k], &cdf_chart(c, k)));
        out.push_str(&figure(c, &[k], &ms_histogram_chart(c, k)));
        out.push_str("</div>");
    }
    out.push_str("<h2>Time series</h2><div class=\"charts\">");
    for k in 0..c.keys.len() {
        out.push_str(&figure(c, &[k], &time_series_chart(c, k)));
    }
    out.push_str("</div>");
    if hosts::has_fleet(c) {
        out.push_str("<h2>Per host</h2><div class=\"charts\">");
        for k in 0..c.keys.len() {
            for t in 0..c.targets.len() {
                if let Some(chart) = host_chart(c, k, t) {
                    out.push_str(&figure(c, &[k], &chart));
                }
            }
        }
        out.push_str("</div>");
        out.push_str(&table(&hosts::host_table(c)));
    }
    let tp = markdown::throughput_table(c);
    let _ = write!(out, "<h2>{}</h2>", esc(&tp.title));
    let links: Vec<String> = (0..c.keys.len())
        .filter_map(|k| link_chart(c, k).map(|chart| figure(c, &[k], &chart)))
        .collect();
    if !links.is_empty() {
        let _ = write!(out, "<div class=\"charts\">{}</div>", links.concat());
    }
    out.push_str(&table(&tp));
    let net = super::network::network_table(c);
    if !net.rows.is_empty() {
        let _ = write!(out, "<h2>{}</h2>{}", esc(&net.title), table(&net));
    }
    out.push_str(&meta_sections(c));
    end_page(c, out)
}

/// The tables of the `storlab meta` runs, one section per kind (nothing
/// when the report has none).
fn meta_sections(c: &Comparison) -> String {
    super::meta::tables(&c.sources)
        .iter()
        .map(|t| format!("<h2>{}</h2>{}", esc(&t.title), table(t)))
        .collect()
}

/// The environment, the commands to reproduce each run, and the page's end.
fn end_page(c: &Comparison, mut out: String) -> String {
    let env = markdown::environment_table(c);
    let _ = write!(out, "<h2>{}</h2>{}", esc(&env.title), table(&env));
    out.push_str("<h2>Reproduce</h2>");
    for s in &c.sources {
        let _ = write!(
            out,
            "<p>{}:</p><pre>{}</pre>",
            esc(&s.name),
            esc(&shell_line(&s.run.command))
        );
    }
    out.push_str("</body></html>\n");
    out
}
