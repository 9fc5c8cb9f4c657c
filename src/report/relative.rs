//! The comparison behind every report: points of one or more runs lined up by
//! job name + load point label, one column per target, each figure relative
//! to a baseline target (= 100), as in the studies' figures. Repeated points
//! (the same job, label and target more than once) become a mean with a 95%
//! confidence interval and a "within noise" verdict against the baseline
//! ([`super::stats_ci`]). Also the sweep curves (IOPS against latency) with
//! their knee and the best IOPS under a p99 latency bound, and the long-form
//! CSV of every table. This is the one computation of the relative table:
//! the reports ([`super::markdown`], [`super::html`], [`super::csv`]) and
//! `storlab compare`'s printed tables ([`super::text::comparison_tables`])
//! all render it. Points of a `storlab compare` run carry their servers'
//! CPU, so the server and client + server CPU per I/O are compared too.

use super::stats_ci::{Estimate, within_noise};
use super::vocab::{Figures, Metric, ServerCost};
use crate::model::{PointResult, RunRecord};

/// One run to compare, and how the user named it (a run id or a file).
#[derive(Clone, Debug)]
pub struct Source {
    /// Run id in the database, or the path of a `--json` file.
    pub name: String,
    /// The run.
    pub run: RunRecord,
}

/// The target a point ran against: its targets joined by " + ".
pub fn target_of(p: &PointResult) -> String {
    p.targets.join(" + ")
}

/// One figure of one target at one row.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Mean, spread and confidence over the repeats.
    pub est: Estimate,
    /// Mean relative to the baseline's mean, baseline = 100; `None` when the
    /// baseline has no value here (or it is 0).
    pub relative: Option<f64>,
    /// Whether the difference from the baseline is within noise (Welch's
    /// t-test); `None` for the baseline itself or when there is no baseline.
    pub within_noise: Option<bool>,
}

/// One row of a table: a job and load point.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Job name.
    pub job: String,
    /// Load point label.
    pub label: String,
    /// One cell per target, `None` where that target has no such point.
    pub cells: Vec<Option<Cell>>,
}

/// One figure across every row and target.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The figure.
    pub metric: Metric,
    /// Rows, in order of first appearance.
    pub rows: Vec<Row>,
}

/// Points of several runs lined up by (job, label) and target.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The runs, as given.
    pub sources: Vec<Source>,
    /// Targets, in order of first appearance.
    pub targets: Vec<String>,
    /// Index of the baseline target in `targets`.
    pub baseline: usize,
    /// (job, label) keys, in order of first appearance.
    pub keys: Vec<(String, String)>,
    /// `cells[key][target]`: every repeat of that point on that target.
    cells: Vec<Vec<Vec<Entry>>>,
}

/// Where one repeat is: (source, job, point) indices, and its servers' CPU
/// when its run recorded it.
#[derive(Clone, Debug)]
struct Entry {
    at: (usize, usize, usize),
    server: Option<ServerCost>,
}

impl Comparison {
    /// Line up every point of `sources`. `baseline` names a target (default:
    /// the first one seen); an unknown name is an error listing the targets.
    pub fn new(sources: Vec<Source>, baseline: Option<&str>) -> Result<Comparison, String> {
        let mut c = Comparison {
            sources,
            targets: Vec::new(),
            baseline: 0,
            keys: Vec::new(),
            cells: Vec::new(),
        };
        for (si, src) in c.sources.iter().enumerate() {
            for (ji, job) in src.run.jobs.iter().enumerate() {
                for (pi, p) in job.points.iter().enumerate() {
                    let t = target_of(p);
                    let ti = match c.targets.iter().position(|x| *x == t) {
                        Some(i) => i,
                        None => {
                            c.targets.push(t);
                            c.cells.iter_mut().for_each(|row| row.push(Vec::new()));
                            c.targets.len() - 1
                        }
                    };
                    let key = (job.name.clone(), p.label.clone());
                    let ki = match c.keys.iter().position(|k| *k == key) {
                        Some(i) => i,
                        None => {
                            c.keys.push(key);
                            c.cells.push(vec![Vec::new(); c.targets.len()]);
                            c.keys.len() - 1
                        }
                    };
                    let server = server_cost(&src.run, ji, pi);
                    c.cells[ki][ti].push(Entry {
                        at: (si, ji, pi),
                        server,
                    });
                }
            }
        }
        if c.targets.is_empty() && !c.sources.iter().any(|s| s.run.meta.is_some()) {
            let names: Vec<&str> = c.sources.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "nothing to report: run(s) {} hold no load points",
                names.join(", ")
            ));
        }
        if let Some(b) = baseline.filter(|_| c.targets.is_empty()) {
            return Err(format!(
                "invalid --baseline {b:?}: the runs hold no load points, only storlab meta \
                 runs, which are not relative to a baseline"
            ));
        }
        if let Some(b) = baseline {
            c.baseline = c.targets.iter().position(|t| t == b).ok_or_else(|| {
                format!(
                    "invalid --baseline {b:?} (allowed: {})",
                    c.targets
                        .iter()
                        .map(|t| format!("{t:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        }
        Ok(c)
    }

    /// Whether any run has load points (else every run is a `storlab meta`
    /// run, and there is no baseline).
    pub fn has_points(&self) -> bool {
        !self.targets.is_empty()
    }

    /// The baseline target (only when [`Comparison::has_points`]).
    pub fn baseline_name(&self) -> &str {
        &self.targets[self.baseline]
    }

    /// Every repeat of key `k` on target `t`.
    pub fn points(&self, k: usize, t: usize) -> Vec<&PointResult> {
        self.sourced_points(k, t)
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// What bound key `k` on target `t`: its first repeat's bound (`None`:
    /// no point, or none judged).
    pub fn bound(&self, k: usize, t: usize) -> Option<&crate::model::Bound> {
        self.points(k, t).into_iter().find_map(|p| p.bound.as_ref())
    }

    /// Whether any repeat of key `k` on target `t` ran on a saturated
    /// machine: its figures measure this machine, and are flagged so.
    pub fn machine_bound(&self, k: usize, t: usize) -> bool {
        self.points(k, t)
            .iter()
            .any(|p| p.bound.as_ref().is_some_and(|b| b.machine))
    }

    /// Where the runs measured ("medium array-15k, link 10gbe (MTU 1500)"),
    /// each distinct place once; empty when no run was on a lab.
    pub fn measured_on(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for s in &self.sources {
            if let Some(n) = &s.run.environment.network {
                let d = n.describe();
                if !seen.contains(&d) {
                    seen.push(d);
                }
            }
        }
        seen.join("; ")
    }

    /// Every repeat of key `k` on target `t`, with the run it belongs to.
    pub fn sourced_points(&self, k: usize, t: usize) -> Vec<(&Source, &PointResult)> {
        self.cells[k][t]
            .iter()
            .map(|e| {
                let (s, j, p) = e.at;
                (&self.sources[s], &self.sources[s].run.jobs[j].points[p])
            })
            .collect()
    }

    /// The figures of every repeat of key `k` on target `t`.
    pub fn figures(&self, k: usize, t: usize) -> Vec<Figures<'_>> {
        self.cells[k][t]
            .iter()
            .map(|e| {
                let (s, j, p) = e.at;
                Figures {
                    summary: &self.sources[s].run.jobs[j].points[p].summary,
                    server: e.server.clone(),
                    link_bps: None,
                }
            })
            .collect()
    }

    /// Values of `m` over the repeats of key `k` on target `t` (the repeats
    /// where it has a value).
    pub fn values(&self, m: Metric, k: usize, t: usize) -> Vec<f64> {
        self.figures(k, t)
            .iter()
            .filter_map(|f| m.value(f))
            .collect()
    }

    /// Whether any point's run recorded its servers' CPU (`storlab compare`).
    pub fn has_server_cpu(&self) -> bool {
        self.cells
            .iter()
            .flatten()
            .flatten()
            .any(|e| e.server.is_some())
    }

    /// The figures of the tables, in order: IOPS, mean and p99 latency, CPU
    /// per I/O (the client's; with servers' CPU, the server's and both), Gb/s.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut out = vec![
            Metric::Iops,
            Metric::LatMean,
            Metric::LatP99,
            Metric::ClientCpuPerIo,
        ];
        if self.has_server_cpu() {
            out.extend([Metric::ServerCpuPerIo, Metric::BothCpuPerIo]);
        }
        out.push(Metric::Gbits);
        out
    }

    /// The figures drawn as relative bars: IOPS, mean latency and CPU per I/O
    /// (the client's, and with servers' CPU, client + server).
    pub fn relative_metrics(&self) -> Vec<Metric> {
        let mut out = vec![Metric::Iops, Metric::LatMean, Metric::ClientCpuPerIo];
        if self.has_server_cpu() {
            out.push(Metric::BothCpuPerIo);
        }
        out
    }

    /// Whether any point was repeated.
    pub fn has_repeats(&self) -> bool {
        self.cells.iter().flatten().any(|c| c.len() > 1)
    }

    /// The table of one figure.
    pub fn table(&self, m: Metric) -> Table {
        let rows = self
            .keys
            .iter()
            .enumerate()
            .map(|(k, (job, label))| {
                let base = self.values(m, k, self.baseline);
                let base_mean = Estimate::of(&base).mean;
                let cells = (0..self.targets.len())
                    .map(|t| {
                        let v = self.values(m, k, t);
                        if v.is_empty() {
                            return None;
                        }
                        let est = Estimate::of(&v);
                        let relative = (!base.is_empty() && base_mean != 0.0)
                            .then(|| est.mean / base_mean * 100.0);
                        let within_noise = (t != self.baseline && !base.is_empty())
                            .then(|| within_noise(&v, &base));
                        Some(Cell {
                            est,
                            relative,
                            within_noise,
                        })
                    })
                    .collect();
                Row {
                    job: job.clone(),
                    label: label.clone(),
                    cells,
                }
            })
            .collect();
        Table { metric: m, rows }
    }

    /// Sweep curves: for every job with two or more load points, one curve
    /// per target.
    pub fn curves(&self) -> Vec<Sweep> {
        let mut jobs: Vec<&str> = Vec::new();
        for (j, _) in &self.keys {
            if !jobs.contains(&j.as_str()) {
                jobs.push(j);
            }
        }
        jobs.into_iter()
            .filter_map(|job| {
                let keys: Vec<usize> = (0..self.keys.len())
                    .filter(|&k| self.keys[k].0 == job)
                    .collect();
                if keys.len() < 2 {
                    return None;
                }
                let curves = (0..self.targets.len())
                    .map(|t| Curve {
                        target: t,
                        points: keys
                            .iter()
                            .filter(|&&k| !self.cells[k][t].is_empty())
                            .map(|&k| {
                                let mean = |m| Estimate::of(&self.values(m, k, t)).mean;
                                CurvePoint {
                                    label: self.keys[k].1.clone(),
                                    iops: mean(Metric::Iops),
                                    mean_ms: mean(Metric::LatMean),
                                    p99_ms: mean(Metric::LatP99),
                                }
                            })
                            .collect(),
                    })
                    .filter(|c: &Curve| !c.points.is_empty())
                    .collect();
                Some(Sweep {
                    job: job.to_string(),
                    curves,
                })
            })
            .collect()
    }
}

/// The servers' CPU around point `pi` of job `ji` of a `storlab compare`
/// run: the n-th repeat of a (target, job, point) is the n-th record of its
/// servers' CPU. `None` for other runs.
fn server_cost(run: &RunRecord, ji: usize, pi: usize) -> Option<ServerCost> {
    let info = run.compare.as_ref()?;
    let job = &run.jobs[ji];
    let p = &job.points[pi];
    // A point names its target by URL, or by its short name once a report
    // has renamed it.
    let target_of = |p: &PointResult| {
        let t = p.targets.first()?;
        info.targets
            .iter()
            .find(|(name, url)| name == t || url == t)
            .map(|(name, _)| name.as_str())
    };
    let name = target_of(p)?;
    let nth = run
        .jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| {
            job.points
                .iter()
                .enumerate()
                .map(move |(i, q)| (j, i, job, q))
        })
        .take_while(|&(j, i, _, _)| (j, i) != (ji, pi))
        .filter(|&(_, _, jb, q)| {
            jb.name == job.name && q.label == p.label && target_of(q) == Some(name)
        })
        .count();
    let rec = info
        .server_cpu
        .iter()
        .filter(|c| c.target == name && c.job == job.name && c.point == p.label)
        .nth(nth)?;
    Some(ServerCost::of(p, &rec.servers))
}

impl Cell {
    /// The absolute figure as text: "mean ±ci" (the interval only with repeats).
    pub fn fmt(&self, m: Metric) -> String {
        m.fmt_estimate(&self.est)
    }

    /// The relative figure as text: "112" (and "≈" when within noise), "–"
    /// without a baseline value.
    pub fn fmt_relative(&self) -> String {
        match self.relative {
            Some(r) => {
                let noise = if self.within_noise == Some(true) {
                    " ≈"
                } else {
                    ""
                };
                format!("{r:.0}{noise}")
            }
            None => "–".into(),
        }
    }
}

/// One load point of a sweep (means over repeats).
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    /// Load point label.
    pub label: String,
    /// IOPS.
    pub iops: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// p99 latency, ms.
    pub p99_ms: f64,
}

/// One target's sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Index into [`Comparison::targets`].
    pub target: usize,
    /// Load points in the job's order.
    pub points: Vec<CurvePoint>,
}

impl Curve {
    /// The knee: the load point with the most "power", IOPS divided by mean
    /// latency (Kleinrock's optimal operating point: past it, latency grows
    /// faster than throughput). `None` when no point has a latency.
    pub fn knee(&self) -> Option<usize> {
        self.points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.mean_ms > 0.0)
            .max_by(|a, b| {
                (a.1.iops / a.1.mean_ms)
                    .partial_cmp(&(b.1.iops / b.1.mean_ms))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(i, _)| i)
    }

    /// The load point with the most IOPS whose p99 latency is at most
    /// `p99_ms`; `None` when none qualifies.
    pub fn max_iops_under(&self, p99_ms: f64) -> Option<usize> {
        self.points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.p99_ms <= p99_ms && p.iops > 0.0)
            .max_by(|a, b| {
                a.1.iops
                    .partial_cmp(&b.1.iops)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(i, _)| i)
    }
}

/// Every target's curve for one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Job name.
    pub job: String,
    /// One curve per target that ran the job.
    pub curves: Vec<Curve>,
}
