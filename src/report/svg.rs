//! Charts as inline SVG text, rendered on the server so a report needs no
//! script: grouped bars and line charts (linear or log x, shaded bands,
//! marked points, a reference line). Every mark carries a `<title>` with its
//! exact value, which browsers show on hover. Output is deterministic: the
//! same input gives the same bytes.

use std::fmt::Write;

/// Series colours, in order (colour-blind safe).
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
];

const W: f64 = 640.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 56.0;

/// Escape text for XML and HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A tick label: short, without trailing zeros.
fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// About five round ticks covering `0..=max` (or `min..=max`).
fn ticks(min: f64, max: f64) -> Vec<f64> {
    let span = (max - min).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A "nice" upper bound at least `v`.
fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&m| m >= v)
        .unwrap_or(10.0 * mag)
}

fn open(out: &mut String, title: &str, w: f64, h: f64) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" role=\"img\" class=\"chart\"><title>{}</title>",
        esc(title)
    );
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"18\" class=\"ct\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        esc(title)
    );
}

/// The legend: a swatch of colour `i` and the name of each `(i, name)`,
/// left to right along the baseline `y`.
fn legend<'a>(out: &mut String, entries: impl Iterator<Item = (usize, &'a str)>, y: f64) {
    let mut x = LEFT;
    for (i, n) in entries {
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"lg\">{}</text>",
            y - 9.0,
            colour(i),
            x + 14.0,
            y,
            esc(n)
        );
        x += 24.0 + 6.5 * n.chars().count() as f64;
    }
}

/// A bar in a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Series (colour and legend entry).
    pub series: usize,
    /// Height.
    pub value: f64,
    /// Hover text (the exact figures).
    pub tip: String,
    /// Half-width of an error bar (a 95% confidence interval).
    pub err: Option<f64>,
}

/// A group of bars under one label.
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    /// Label under the group.
    pub label: String,
    /// Its bars.
    pub bars: Vec<Bar>,
}

/// Grouped bars.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// Title.
    pub title: String,
    /// Y axis label.
    pub y_label: String,
    /// Legend names of the series.
    pub series: Vec<String>,
    /// Groups, left to right.
    pub groups: Vec<BarGroup>,
    /// A dashed horizontal line (the baseline's 100).
    pub reference: Option<f64>,
}

/// Render grouped bars.
pub fn bar_chart(c: &BarChart) -> String {
    let mut out = String::new();
    let n_bars: usize = c.groups.iter().map(|g| g.bars.len()).sum::<usize>().max(1);
    let w = (LEFT + RIGHT + 18.0 * n_bars as f64 + 24.0 * c.groups.len() as f64).max(W);
    open(&mut out, &c.title, w, H);
    let top = c
        .groups
        .iter()
        .flat_map(|g| &g.bars)
        .map(|b| b.value + b.err.unwrap_or(0.0))
        .chain(c.reference)
        .fold(0.0, f64::max);
    let ymax = nice_max(top);
    let plot_h = H - TOP - BOTTOM;
    let y = |v: f64| TOP + plot_h * (1.0 - v / ymax);
    axes_y(&mut out, &ticks(0.0, ymax), &y, w, &c.y_label);
    let plot_w = w - LEFT - RIGHT;
    let slot = plot_w / c.groups.len().max(1) as f64;
    for (gi, g) in c.groups.iter().enumerate() {
        let x0 = LEFT + gi as f64 * slot;
        let bw = ((slot - 8.0) / g.bars.len().max(1) as f64).min(40.0);
        let start = x0 + (slot - bw * g.bars.len() as f64) / 2.0;
        for (bi, b) in g.bars.iter().enumerate() {
            let x = start + bi as f64 * bw;
            let (yt, yb) = (y(b.value.max(0.0)), y(0.0));
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{yt:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                (bw - 2.0).max(1.0),
                yb - yt,
                colour(b.series),
                esc(&b.tip)
            );
            if let Some(e) = b.err.filter(|e| *e > 0.0) {
                let cx = x + (bw - 2.0) / 2.0;
                let _ = write!(
                    out,
                    "<path d=\"M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}h6M{:.1} {:.1}h6\" class=\"eb\"/>",
                    y(b.value + e),
                    y((b.value - e).max(0.0)),
                    cx - 3.0,
                    y(b.value + e),
                    cx - 3.0,
                    y((b.value - e).max(0.0))
                );
            }
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"xl\" text-anchor=\"middle\">{}</text>",
            x0 + slot / 2.0,
            H - BOTTOM + 14.0,
            esc(&g.label)
        );
    }
    if let Some(r) = c.reference {
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"ref\"><title>baseline = {}</title></line>",
            w - RIGHT,
            y(r),
            y(r),
            trim(r)
        );
    }
    legend(
        &mut out,
        c.series.iter().map(String::as_str).enumerate(),
        H - 12.0,
    );
    out.push_str("</svg>");
    out
}

fn axes_y(out: &mut String, ticks: &[f64], y: &dyn Fn(f64) -> f64, w: f64, label: &str) {
    for &t in ticks {
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"end\">{}</text>",
            w - RIGHT,
            y(t),
            y(t),
            LEFT - 4.0,
            y(t) + 4.0,
            tick_label(t)
        );
    }
    let _ = write!(
        out,
        "<text x=\"14\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
        TOP + (H - TOP - BOTTOM) / 2.0,
        TOP + (H - TOP - BOTTOM) / 2.0,
        esc(label)
    );
}

/// One line of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Colour index.
    pub colour: usize,
    /// Points `(x, y)`, drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Hover text per point (same length as `points`, or empty for none).
    pub tips: Vec<String>,
    /// Draw a dot at every point.
    pub dots: bool,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis (latency CDFs); values `<= 0` are left out.
    pub log_x: bool,
    /// Lines.
    pub series: Vec<Series>,
    /// Shaded x ranges `(from, to, hover text)` (the ramp).
    pub bands: Vec<(f64, f64, String)>,
    /// Marked points `(x, y, colour index, hover text)` (the knee).
    pub marks: Vec<(f64, f64, usize, String)>,
    /// A dashed horizontal line `(y, hover text)` (a latency bound).
    pub hline: Option<(f64, String)>,
}

/// A line chart's x axis: linear from `lo` or logarithmic, to `hi`.
struct XAxis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl XAxis {
    /// The axis that holds every x of `c`'s series and bands (only the
    /// positive ones on a log axis).
    fn of(c: &LineChart) -> XAxis {
        let xs = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(c.bands.iter().flat_map(|b| [b.0, b.1]))
            .filter(|&x| (!c.log_x || x > 0.0) && x.is_finite());
        let (mut xmin, mut xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        if !xmin.is_finite() {
            (xmin, xmax) = (if c.log_x { 1.0 } else { 0.0 }, 1.0);
        }
        let (lo, hi) = if c.log_x {
            let lo = 10f64.powf(xmin.log10().floor());
            let hi = 10f64.powf(xmax.log10().ceil().max(lo.log10() + 1.0));
            (lo, hi)
        } else {
            (xmin.min(0.0), nice_max(xmax))
        };
        XAxis {
            log: c.log_x,
            lo,
            hi,
        }
    }

    /// Whether `x` can be drawn (a log axis has no place for x <= 0).
    fn keeps(&self, x: f64) -> bool {
        !self.log || x > 0.0
    }

    /// The picture's x of `v`, over a plot `plot_w` wide.
    fn at(&self, v: f64, plot_w: f64) -> f64 {
        if self.log {
            LEFT + plot_w * (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            LEFT + plot_w * (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The ticks: each power of ten on a log axis, else round steps.
    fn ticks(&self) -> Vec<f64> {
        if !self.log {
            return ticks(self.lo, self.hi);
        }
        let mut v = Vec::new();
        let mut t = self.lo;
        while t <= self.hi * 1.0001 {
            v.push(t);
            t *= 10.0;
        }
        v
    }
}

/// Render a line chart.
pub fn line_chart(c: &LineChart) -> String {
    let mut out = String::new();
    open(&mut out, &c.title, W, H);
    let axis = XAxis::of(c);
    let ytop = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(c.hline.as_ref().map(|h| h.0))
        .fold(0.0, f64::max);
    let ymax = nice_max(ytop);
    let (plot_w, plot_h) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let (lo, hi) = (axis.lo, axis.hi);
    let x = |v: f64| axis.at(v, plot_w);
    let y = |v: f64| TOP + plot_h * (1.0 - v / ymax);
    for (a, b, tip) in &c.bands {
        let (xa, xb) = (x(a.max(lo)), x(b.min(hi)));
        let _ = write!(
            out,
            "<rect x=\"{xa:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{plot_h}\" class=\"band\"><title>{}</title></rect>",
            (xb - xa).max(0.0),
            esc(tip)
        );
    }
    axes_y(&mut out, &ticks(0.0, ymax), &y, W, &c.y_label);
    for t in axis.ticks() {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"middle\">{}</text>",
            x(t),
            x(t),
            TOP + plot_h,
            x(t),
            TOP + plot_h + 14.0,
            tick_label(t)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>",
        LEFT + plot_w / 2.0,
        TOP + plot_h + 30.0,
        esc(&c.x_label)
    );
    if let Some((v, tip)) = &c.hline {
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"ref\"><title>{}</title></line>",
            W - RIGHT,
            y(*v),
            y(*v),
            esc(tip)
        );
    }
    for s in &c.series {
        draw_series(&mut out, s, |px, py| axis.keeps(px).then(|| (x(px), y(py))));
    }
    for (mx, my, ci, tip) in &c.marks {
        if axis.keeps(*mx) {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"7\" class=\"mark\" stroke=\"{}\"><title>{}</title></circle>",
                x(*mx),
                y(*my),
                colour(*ci),
                esc(tip)
            );
        }
    }
    legend(
        &mut out,
        c.series.iter().map(|s| (s.colour, s.name.as_str())),
        H - 12.0,
    );
    out.push_str("</svg>");
    out
}

/// One series of a line chart: its path and, with `dots`, a dot with its
/// hover text per point; `place` maps a point into the picture, `None` for
/// one the axis cannot show.
fn draw_series(out: &mut String, s: &Series, place: impl Fn(f64, f64) -> Option<(f64, f64)>) {
    let pts: Vec<(usize, (f64, f64))> = s
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, &(px, py))| place(px, py).map(|xy| (i, xy)))
        .collect();
    let mut d = String::new();
    for (i, (_, (px, py))) in pts.iter().enumerate() {
        let _ = write!(d, "{}{px:.1} {py:.1}", if i == 0 { "M" } else { "L" });
    }
    let _ = write!(
        out,
        "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>{}</title></path>",
        colour(s.colour),
        esc(&s.name)
    );
    if s.dots {
        for (i, (px, py)) in pts {
            let tip = s.tips.get(i).map(String::as_str).unwrap_or("");
            let _ = write!(
                out,
                "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3.5\" fill=\"{}\"><title>{}</title></circle>",
                colour(s.colour),
                esc(tip)
            );
        }
    }
}

/// CSS for the chart classes, for the page that embeds the charts.
pub const CSS: &str = ".chart{max-width:100%;height:auto;font:11px sans-serif;background:#fff}\
.chart .ct{font-weight:bold;font-size:13px}.chart .grid{stroke:#e4e4e4}\
.chart .tk,.chart .lg,.chart .xl{fill:#333}.chart .al{fill:#555}\
.chart .ref{stroke:#555;stroke-dasharray:5 4}.chart .band{fill:#f2e6c9}\
.chart .eb{stroke:#222;fill:none}.chart .mark{fill:none;stroke-width:2.5}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_max(97.0), 100.0);
        assert_eq!(nice_max(100.0), 100.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(tick_label(25000.0), "25k");
        assert_eq!(tick_label(0.5), "0.5");
    }

    #[test]
    fn escapes_and_titles() {
        let s = bar_chart(&BarChart {
            title: "a<b".into(),
            y_label: "y".into(),
            series: vec!["t&1".into()],
            groups: vec![BarGroup {
                label: "g".into(),
                bars: vec![Bar {
                    series: 0,
                    value: 5.0,
                    tip: "5 \"IOPS\"".into(),
                    err: Some(1.0),
                }],
            }],
            reference: Some(100.0),
        });
        assert!(s.contains("a&lt;b") && s.contains("t&amp;1") && s.contains("&quot;IOPS&quot;"));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
    }
}
