//! What the studies' renderers share: a figure of every target at every
//! load point of a job (a [`Grid`]), laid out as a table, as grouped bars or
//! as lines against a size; the figures read through the report's one
//! vocabulary ([`Metric`]) and its one relative computation ([`Comparison`]).

use crate::model::PointResult;
use crate::report::format::{TextTable, fmt_num};
use crate::report::relative::Comparison;
use crate::report::stats_ci::Estimate;
use crate::report::svg::{self, Bar, BarChart, BarGroup, LineChart, Series};
use crate::report::vocab::Metric;

/// The keys (load points) of `job` in `c`, in run order.
pub fn job_keys(c: &Comparison, job: &str) -> Vec<usize> {
    (0..c.keys.len()).filter(|&k| c.keys[k].0 == job).collect()
}

/// The mean of `m` over the repeats of key `k` on target `t`.
pub fn mean(c: &Comparison, m: Metric, k: usize, t: usize) -> Option<f64> {
    let v = c.values(m, k, t);
    (!v.is_empty()).then(|| Estimate::of(&v).mean)
}

/// The first repeat of key `k` on target `t`.
pub fn point(c: &Comparison, k: usize, t: usize) -> Option<&PointResult> {
    c.points(k, t).into_iter().next()
}

/// The block size of a point (its first group's largest).
pub fn block_size(p: &PointResult) -> u64 {
    p.spec.groups.first().map_or(0, |g| g.access.bs.max())
}

/// A figure of some columns (targets, or target and direction) at each row
/// (load point).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    /// Row names (load points), top to bottom.
    pub rows: Vec<String>,
    /// Column names, left to right.
    pub cols: Vec<String>,
    /// `cells[row][col]`.
    pub cells: Vec<Vec<Option<f64>>>,
    /// `marks[row][col]`: the cell was measured while the machine's CPUs
    /// were saturated, so its figure measures this machine; empty or short:
    /// unmarked.
    pub marks: Vec<Vec<bool>>,
}

impl Grid {
    /// The grid of `job` in `c`: a row per load point, a column per target
    /// that measured any of them, each cell `f(key, target)`.
    pub fn of(c: &Comparison, job: &str, f: impl Fn(usize, usize) -> Option<f64>) -> Grid {
        let keys = job_keys(c, job);
        let targets: Vec<usize> = (0..c.targets.len())
            .filter(|&t| keys.iter().any(|&k| !c.points(k, t).is_empty()))
            .collect();
        Grid {
            rows: keys.iter().map(|&k| c.keys[k].1.clone()).collect(),
            cols: targets.iter().map(|&t| c.targets[t].clone()).collect(),
            cells: keys
                .iter()
                .map(|&k| targets.iter().map(|&t| f(k, t)).collect())
                .collect(),
            marks: keys
                .iter()
                .map(|&k| targets.iter().map(|&t| c.machine_bound(k, t)).collect())
                .collect(),
        }
    }

    /// The grid of `m` relative to the baseline (= 100) over `job`.
    pub fn relative(c: &Comparison, job: &str, m: Metric) -> Grid {
        let table = c.table(m);
        Grid::of(c, job, |k, t| table.rows[k].cells[t].as_ref()?.relative)
    }

    /// The grid of `m`'s mean over `job`.
    pub fn metric(c: &Comparison, job: &str, m: Metric) -> Grid {
        Grid::of(c, job, |k, t| mean(c, m, k, t))
    }

    /// The means of several figures of `job` side by side: a column per
    /// target and figure ("nfs3 IOPS", "nfs3 mean ms").
    pub fn metrics(c: &Comparison, job: &str, ms: &[Metric]) -> Grid {
        let grids: Vec<Grid> = ms.iter().map(|&m| Grid::metric(c, job, m)).collect();
        let Some(first) = grids.first() else {
            return Grid::default();
        };
        let mut cols = Vec::new();
        for t in &first.cols {
            cols.extend(ms.iter().map(|m| format!("{t} {}", m.column())));
        }
        let cells = (0..first.rows.len())
            .map(|r| {
                (0..first.cols.len())
                    .flat_map(|t| grids.iter().map(move |g| g.cells[r][t]))
                    .collect()
            })
            .collect();
        let marks = (0..first.rows.len())
            .map(|r| {
                (0..first.cols.len())
                    .flat_map(|t| grids.iter().map(move |g| g.marked(r, t)))
                    .collect()
            })
            .collect();
        Grid {
            rows: first.rows.clone(),
            cols,
            cells,
            marks,
        }
    }

    /// Named figures of a job's one load point as rows: for each `(name,
    /// m)`, the first row of `grid(m)`; the columns are the first grid's.
    pub fn figures(figures: &[(&str, Metric)], grid: impl Fn(Metric) -> Grid) -> Grid {
        let grids: Vec<Grid> = figures.iter().map(|(_, m)| grid(*m)).collect();
        Grid {
            rows: figures.iter().map(|(n, _)| n.to_string()).collect(),
            cols: grids.first().map(|g| g.cols.clone()).unwrap_or_default(),
            cells: grids
                .iter()
                .map(|g| g.cells.first().cloned().unwrap_or_default())
                .collect(),
            marks: grids
                .iter()
                .map(|g| g.marks.first().cloned().unwrap_or_default())
                .collect(),
        }
    }

    /// Whether cell (`row`, `col`) was measured on a saturated machine.
    pub fn marked(&self, row: usize, col: usize) -> bool {
        self.marks
            .get(row)
            .and_then(|r| r.get(col))
            .copied()
            .unwrap_or(false)
    }

    /// Whether no cell has a value.
    pub fn is_empty(&self) -> bool {
        self.cells.iter().flatten().all(Option::is_none)
    }

    /// As a table: the first column `first` (the row names), then a column
    /// per column of the grid, each value written by `fmt` ("–" for none).
    pub fn table(&self, title: &str, first: &str, fmt: impl Fn(f64) -> String) -> TextTable {
        let mut head = vec![first.to_string()];
        head.extend(self.cols.iter().cloned());
        let mut marked = false;
        let rows = self
            .rows
            .iter()
            .zip(&self.cells)
            .enumerate()
            .map(|(i, (r, cells))| {
                let mut row = vec![r.clone()];
                row.extend(cells.iter().enumerate().map(|(j, v)| match v {
                    None => "–".into(),
                    Some(v) if self.marked(i, j) => {
                        marked = true;
                        format!("{}{}", fmt(*v), crate::report::text::MACHINE_MARK)
                    }
                    Some(v) => fmt(*v),
                }));
                row
            })
            .collect();
        TextTable {
            title: title.to_string(),
            head,
            rows,
            note: if marked {
                crate::report::text::MACHINE_NOTE.to_string()
            } else {
                String::new()
            },
        }
    }

    /// As grouped bars: a group per row, a bar per column, the dashed line
    /// at `reference` (the baseline's 100); each bar's tip says its row,
    /// column and value with `unit`.
    pub fn bars(&self, title: &str, y_label: &str, unit: &str, reference: Option<f64>) -> String {
        let groups = self
            .rows
            .iter()
            .zip(&self.cells)
            .map(|(r, cells)| BarGroup {
                label: r.clone(),
                bars: cells
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| {
                        let v = (*v)?;
                        Some(Bar {
                            series: i,
                            value: v,
                            tip: format!("{r} · {}: {} {unit}", self.cols[i], fmt_num(v)),
                            err: None,
                        })
                    })
                    .collect(),
            })
            .collect();
        svg::bar_chart(&BarChart {
            title: title.to_string(),
            y_label: y_label.to_string(),
            series: self.cols.clone(),
            groups,
            reference,
        })
    }

    /// As lines against `xs` (one x per row, a size in bytes drawn in KiB on
    /// a log axis): a line per column, then the `extra` lines (a link's
    /// payload rate), undotted.
    pub fn lines(
        &self,
        title: &str,
        xs: &[u64],
        y_label: &str,
        extra: Vec<(String, Vec<(f64, f64)>)>,
    ) -> String {
        let kib = |b: u64| b as f64 / 1024.0;
        let mut series: Vec<Series> = (0..self.cols.len())
            .map(|i| {
                let pts: Vec<(f64, f64, &String)> = xs
                    .iter()
                    .zip(&self.cells)
                    .zip(&self.rows)
                    .filter_map(|((&x, cells), r)| Some((kib(x), cells[i]?, r)))
                    .collect();
                Series {
                    name: self.cols[i].clone(),
                    colour: i,
                    points: pts.iter().map(|p| (p.0, p.1)).collect(),
                    tips: pts
                        .iter()
                        .map(|p| format!("{} · {}: {}", p.2, self.cols[i], fmt_num(p.1)))
                        .collect(),
                    dots: true,
                }
            })
            .collect();
        let n = series.len();
        series.extend(
            extra
                .into_iter()
                .enumerate()
                .map(|(j, (name, points))| Series {
                    name,
                    colour: n + j,
                    points,
                    tips: Vec::new(),
                    dots: false,
                }),
        );
        svg::line_chart(&LineChart {
            title: title.to_string(),
            x_label: "block size (KiB, log scale)".into(),
            y_label: y_label.to_string(),
            log_x: true,
            series,
            bands: Vec::new(),
            marks: Vec::new(),
            hline: None,
        })
    }
}

/// A relative figure ("97"); the baseline's own is exactly 100.
pub fn fmt_rel(v: f64) -> String {
    format!("{v:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid {
            rows: vec!["32 VMs".into(), "64 VMs".into()],
            cols: vec!["local".into(), "nfs3".into()],
            cells: vec![vec![Some(100.0), Some(96.4)], vec![Some(100.0), None]],
            marks: Vec::new(),
        }
    }

    #[test]
    fn a_grid_is_a_table_with_dashes_for_missing_cells() {
        let t = grid().table("IOPS", "VMs", fmt_rel);
        assert_eq!(t.head, ["VMs", "local", "nfs3"]);
        assert_eq!(t.rows[0], ["32 VMs", "100", "96"]);
        assert_eq!(t.rows[1], ["64 VMs", "100", "–"]);
        assert!(t.note.is_empty(), "nothing marked");
        // A cell measured on a saturated machine is marked, and the note says so.
        let mut g = grid();
        g.marks = vec![vec![false, true]];
        let t = g.table("IOPS", "VMs", fmt_rel);
        assert_eq!(t.rows[0], ["32 VMs", "100", "96!"]);
        assert_eq!(t.rows[1], ["64 VMs", "100", "–"]);
        assert!(t.note.contains("saturated"), "{}", t.note);
    }

    #[test]
    fn bars_and_lines_carry_every_value_as_a_tip() {
        let g = grid();
        let svg = g.bars("t", "y", "rel", Some(100.0));
        assert!(svg.contains("32 VMs · nfs3: 96.40 rel"), "{svg}");
        assert_eq!(
            svg.matches("<rect").count() - 2,
            3,
            "3 bars and 2 legend boxes"
        );
        let svg = g.lines(
            "t",
            &[4096, 8192],
            "MB/s",
            vec![("line".into(), vec![(4.0, 1.0)])],
        );
        assert!(svg.contains("64 VMs · local: 100.0"), "{svg}");
        assert!(svg.contains(">line<"));
    }
}
