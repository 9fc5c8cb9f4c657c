//! The studies' quantitative findings (../shared/FINDINGS.md), each set
//! beside the figure storlab measured in a study's runs, with a verdict.
//!
//! The rule, by the finding's kind: a **relative** finding (protocol against
//! protocol, or against FC = 100) is reproduced when storlab's relative
//! figure lands within 15% of the study's; an **absolute** finding (MB/s,
//! IOPS, ms of hardware storlab emulates) when storlab's figure is in the
//! same direction and within 2x; a **host-CPU** finding when the CPU storlab
//! measures (it says which) points the same way. A finding storlab does not
//! emulate, or did not measure in these runs, differs, and says why. Where a
//! figure differs, the bound storlab named for its points is given. Every
//! verdict is computed here from the run documents, so the report and
//! docs/studies.md say what the runs measured, not what was hoped.

mod f000;
mod f001;
mod f002;
mod f003;
mod f004;

pub use f000::findings as vsphere;
pub use f001::findings as ramp;
pub use f002::findings as zfs;
pub use f003::findings as dss;
pub use f004::findings as freenas;

use super::Results;
use crate::model::{Bound, Limit, PointResult};
use crate::report::relative::{Comparison, Source};
use crate::report::stats_ci::mean;
use crate::report::vocab::Metric;

/// What kind of figure a finding is, which decides its rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Against the baseline or another protocol: within 15%.
    Relative,
    /// Of the emulated hardware: the same direction and within 2x.
    Absolute,
    /// The study's host CPU: the direction of the CPU storlab measures.
    HostCpu,
}

impl Kind {
    /// The name shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Relative => "relative",
            Kind::Absolute => "absolute",
            Kind::HostCpu => "host CPU",
        }
    }
}

/// How a finding stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// storlab's figure meets the finding's rule.
    Reproduced,
    /// It does not, or cannot be measured here; the check says why.
    Differs,
}

impl Verdict {
    /// The word shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Differs => "differs",
        }
    }
}

/// One finding checked against a study's runs (as `findings.json` in the
/// study's output directory holds it).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Check {
    /// FINDINGS.md's id ("F000-1").
    pub id: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// What the study published.
    pub published: &'static str,
    /// What storlab measured, in words with the figures.
    pub measured: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why: for a difference, the bound storlab named (or what it does not
    /// emulate); for a reproduction, how close (or a caveat).
    pub why: String,
}

/// Within 15% of `published`.
pub fn within_15pct(x: f64, published: f64) -> bool {
    (x - published).abs() <= 0.15 * published.abs()
}

/// The same sign as `published` and within a factor of 2 of it.
pub fn within_2x(x: f64, published: f64) -> bool {
    published > 0.0 && x >= published / 2.0 && x <= published * 2.0
}

/// The figures of some of a study's runs, lined up by (job, label) and
/// target name.
pub struct View {
    c: Option<Comparison>,
}

impl View {
    /// Every run whose lab is one of `labs` (empty: every run), relative to
    /// the study's baseline where it ran.
    pub fn of(r: &Results, labs: &[&str]) -> View {
        let sources: Vec<Source> = r
            .runs
            .iter()
            .filter(|lr| labs.is_empty() || labs.contains(&lr.name()))
            .map(|lr| Source {
                name: lr.name().to_string(),
                run: lr.run.clone().with_target_names(),
            })
            .collect();
        let c = Comparison::new(sources.clone(), Some(&r.baseline))
            .or_else(|_| Comparison::new(sources, None))
            .ok();
        View { c }
    }

    fn at(&self, job: &str, label: Option<&str>, target: &str) -> Option<(usize, usize)> {
        let c = self.c.as_ref()?;
        let t = c.targets.iter().position(|x| x == target)?;
        let k = c
            .keys
            .iter()
            .position(|(j, l)| j == job && label.is_none_or(|w| w == l))?;
        (!c.points(k, t).is_empty()).then_some((k, t))
    }

    /// The mean of `m` of `job`'s point `label` (`None`: its first) on `target`.
    pub fn value(&self, job: &str, label: Option<&str>, target: &str, m: Metric) -> Option<f64> {
        let (k, t) = self.at(job, label, target)?;
        let v = self.c.as_ref()?.values(m, k, t);
        (!v.is_empty()).then(|| mean(&v))
    }

    /// `m` of the point relative to the same point on `base` = 100.
    pub fn relative(
        &self,
        job: &str,
        label: Option<&str>,
        target: &str,
        base: &str,
        m: Metric,
    ) -> Option<f64> {
        let b = self.value(job, label, base, m)?;
        let x = self.value(job, label, target, m)?;
        (b > 0.0).then(|| 100.0 * x / b)
    }

    /// The label of `job`'s first point whose spec satisfies `pred`.
    pub fn label_where(
        &self,
        job: &str,
        pred: impl Fn(&crate::workload::Spec) -> bool,
    ) -> Option<String> {
        let c = self.c.as_ref()?;
        c.keys.iter().enumerate().find_map(|(k, (j, l))| {
            let p = (0..c.targets.len()).find_map(|t| c.points(k, t).into_iter().next())?;
            (j == job && pred(&p.spec)).then(|| l.clone())
        })
    }

    /// The load point labels of `job`, in order.
    pub fn labels(&self, job: &str) -> Vec<String> {
        self.c.as_ref().map_or_else(Vec::new, |c| {
            c.keys
                .iter()
                .filter(|(j, _)| j == job)
                .map(|(_, l)| l.clone())
                .collect()
        })
    }

    /// The targets, in order.
    pub fn targets(&self) -> Vec<String> {
        self.c.as_ref().map_or_else(Vec::new, |c| c.targets.clone())
    }

    /// The points (every repeat) of `job`'s point `label` on `target`.
    pub fn points(&self, job: &str, label: Option<&str>, target: &str) -> Vec<&PointResult> {
        match (self.at(job, label, target), &self.c) {
            (Some((k, t)), Some(c)) => c.points(k, t),
            _ => Vec::new(),
        }
    }

    /// What bound `job`'s point `label` on `target`.
    pub fn bound(&self, job: &str, label: Option<&str>, target: &str) -> Option<&Bound> {
        let (k, t) = self.at(job, label, target)?;
        self.c.as_ref()?.bound(k, t)
    }

    /// The bounds of `job`'s points on `targets`, each distinct one once:
    /// "bound nfs3: medium 97%; iscsi: machine 99%".
    pub fn bounds(&self, job: &str, targets: &[&str]) -> String {
        self.bounds_at(job, &self.labels(job), targets)
    }

    /// [`View::bounds`] of `job`'s points `labels` only: each target's
    /// distinct bounds, the most frequent first, with how many points had it.
    pub fn bounds_at(&self, job: &str, labels: &[String], targets: &[&str]) -> String {
        let mut per: Vec<String> = Vec::new();
        for t in targets {
            let mut seen: Vec<(String, usize)> = Vec::new();
            for l in labels {
                if let Some(b) = self.bound(job, Some(l), t) {
                    let cell = b.cell();
                    match seen.iter_mut().find(|(c, _)| *c == cell) {
                        Some(x) => x.1 += 1,
                        None => seen.push((cell, 1)),
                    }
                }
            }
            if seen.is_empty() {
                continue;
            }
            seen.sort_by_key(|b| std::cmp::Reverse(b.1));
            let cells: Vec<String> = seen
                .iter()
                .map(|(c, n)| {
                    if *n > 1 {
                        format!("{c} x{n}")
                    } else {
                        c.clone()
                    }
                })
                .collect();
            per.push(format!("{t}: {}", cells.join(", ")));
        }
        if per.is_empty() {
            "no bound recorded".into()
        } else {
            format!("bound {}", per.join("; "))
        }
    }

    /// Whether any point of `job` on `targets` ran on a saturated machine.
    pub fn machine(&self, job: &str, targets: &[&str]) -> bool {
        self.machine_at(job, &self.labels(job), targets)
    }

    /// [`View::machine`] of `job`'s points `labels` only.
    pub fn machine_at(&self, job: &str, labels: &[String], targets: &[&str]) -> bool {
        targets.iter().any(|t| {
            labels.iter().any(|l| {
                self.bound(job, Some(l), t)
                    .is_some_and(|b| b.machine || b.by == Limit::Machine)
            })
        })
    }
}

/// "96..103" of a set of figures (none: "–").
pub fn range(v: &[f64]) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if (hi - lo).abs() < 0.5 {
        format!("{lo:.0}")
    } else {
        format!("{lo:.0}..{hi:.0}")
    }
}

/// A check whose figures were not measured in these runs.
pub fn not_measured(id: &'static str, kind: Kind, published: &'static str, what: &str) -> Check {
    Check {
        id,
        kind,
        published,
        measured: "not measured".into(),
        verdict: Verdict::Differs,
        why: format!("these runs have no {what} (did the study run to its end?)"),
    }
}

/// The study's findings checked against its runs (`r.study`'s own list).
pub fn evaluate(r: &Results) -> Vec<Check> {
    (r.study.findings)(r)
}

/// The checks as a table: id, kind, published, storlab, verdict, why.
pub fn table(checks: &[Check]) -> crate::report::format::TextTable {
    let reproduced = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Reproduced)
        .count();
    crate::report::format::TextTable {
        title: format!(
            "The study's findings beside storlab's ({reproduced} of {} reproduced)",
            checks.len()
        ),
        head: ["finding", "kind", "published", "storlab", "verdict", "why"]
            .map(String::from)
            .to_vec(),
        rows: checks
            .iter()
            .map(|c| {
                vec![
                    c.id.to_string(),
                    c.kind.as_str().to_string(),
                    c.published.to_string(),
                    c.measured.clone(),
                    c.verdict.as_str().to_string(),
                    c.why.clone(),
                ]
            })
            .collect(),
        note: "reproduced: a relative figure within 15% of the study's, an absolute one in the \
               same direction and within 2x, a host-CPU one pointing the same way in the CPU \
               storlab names (../shared/FINDINGS.md); a figure marked machine-bound measures \
               this machine"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_hold_at_their_edges() {
        assert!(within_15pct(115.0, 100.0) && within_15pct(85.0, 100.0));
        assert!(!within_15pct(115.1, 100.0) && !within_15pct(84.9, 100.0));
        assert!(within_2x(50.0, 100.0) && within_2x(200.0, 100.0));
        assert!(!within_2x(49.9, 100.0) && !within_2x(200.1, 100.0));
        assert!(!within_2x(-100.0, -100.0), "a published figure is positive");
        assert_eq!(range(&[96.2, 103.6, 99.0]), "96..104");
        assert_eq!(range(&[]), "–");
        assert_eq!(range(&[100.1, 100.2]), "100");
    }

    use crate::study::testing::run_of;
    use crate::study::{LabRun, Results, find};

    fn results(number: &str, baseline: &str, runs: Vec<LabRun>) -> Results<'static> {
        Results {
            study: find(number).unwrap(),
            baseline: baseline.into(),
            profile: crate::workload::Profile::Quick,
            runs,
        }
    }

    fn verdict(checks: &[Check], id: &str) -> Verdict {
        checks.iter().find(|c| c.id == id).unwrap().verdict
    }

    #[test]
    fn study_000_is_reproduced_when_every_protocol_stands_beside_4_gb_fc() {
        let labels: &[&str] = &["32 VMs", "64 VMs"];
        let beside = run_of(&[
            (
                "vsphere-shared-4k",
                labels,
                &[
                    ("FC 4Gb (block)", 1.0),
                    ("nfs3 1GbE", 0.97),
                    ("iscsi 10GbE", 1.03),
                ],
            ),
            (
                "vsphere-shared-8k",
                labels,
                &[("FC 4Gb (block)", 1.0), ("nfs3 1GbE", 0.5)],
            ),
        ]);
        let r = results("000", "FC 4Gb (block)", vec![beside]);
        let checks = f000::findings(&r);
        assert_eq!(checks.len(), 7);
        assert_eq!(verdict(&checks, "F000-1"), Verdict::Reproduced);
        assert_eq!(
            verdict(&checks, "F000-2"),
            Verdict::Reproduced,
            "latency 1/scale"
        );
        // Half the baseline's IOPS is far outside 15%.
        assert_eq!(verdict(&checks, "F000-3"), Verdict::Differs);
        // Not measured, and not emulated, differ and say so.
        let oltp = checks.iter().find(|c| c.id == "F000-5").unwrap();
        assert_eq!(oltp.verdict, Verdict::Differs);
        assert!(oltp.measured.contains("not measured"), "{oltp:?}");
        assert_eq!(verdict(&checks, "F000-7"), Verdict::Differs);
        let f1 = &checks[0];
        assert!(f1.measured.contains("nfs3 1GbE 97"), "{f1:?}");
    }

    #[test]
    fn study_002s_gain_is_the_ratio_of_its_two_pools() {
        let pool = |lab: &str, scale: f64| {
            let mut r = run_of(&[("sqlio-8k-randwrite", &["1 VM"], &[("nfs3", scale)])]);
            r.lab = lab.into();
            r
        };
        for (with_log, want) in [(3.9, Verdict::Reproduced), (6.0, Verdict::Differs)] {
            let r = results(
                "002",
                "nfs3",
                vec![pool(f002::POOL, 0.23), pool(f002::SLOG, 0.23 * with_log)],
            );
            let checks = f002::findings(&r);
            let gain = checks.iter().find(|c| c.id == "F002-4").unwrap();
            assert_eq!(gain.verdict, want, "{gain:?}");
            // 230 IOs/sec without the log device, as the study's 227.76.
            assert_eq!(
                verdict(&checks, "F002-1"),
                Verdict::Differs,
                "latency, MB/s off"
            );
            assert!(
                checks[0].measured.contains("nfs3 IOs/sec 230"),
                "{:?}",
                checks[0]
            );
        }
    }

    #[test]
    fn every_study_checks_its_own_findings() {
        let want = [("000", 7), ("001", 4), ("002", 7), ("003", 4), ("004", 3)];
        let mut all = 0;
        for (n, count) in want {
            let r = results(n, "x", Vec::new());
            let checks = evaluate(&r);
            assert_eq!(checks.len(), count, "study {n}");
            for c in &checks {
                assert!(c.id.starts_with(&format!("F{n}-")), "{}", c.id);
                assert_eq!(c.verdict, Verdict::Differs, "nothing measured: {c:?}");
            }
            all += checks.len();
        }
        assert_eq!(all, 25, "../shared/FINDINGS.md lists 25");
    }
}
