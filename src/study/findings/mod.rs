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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// One finding checked against a study's runs.
#[derive(Clone, Debug, PartialEq)]
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
    pub fn label_where(&self, job: &str, pred: impl Fn(&crate::workload::Spec) -> bool) -> Option<String> {
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
    /// "nfs3: medium 97%; iscsi: machine 99%".
    pub fn bounds(&self, job: &str, targets: &[&str]) -> String {
        let mut seen: Vec<String> = Vec::new();
        for t in targets {
            for l in self.labels(job) {
                if let Some(b) = self.bound(job, Some(&l), t) {
                    let s = format!("{t}: {}", b.cell());
                    if !seen.contains(&s) {
                        seen.push(s);
                    }
                }
            }
        }
        if seen.is_empty() {
            "no bound recorded".into()
        } else {
            format!("bound {}", seen.join("; "))
        }
    }

    /// Whether any point of `job` on `targets` ran on a saturated machine.
    pub fn machine(&self, job: &str, targets: &[&str]) -> bool {
        targets.iter().any(|t| {
            self.labels(job).iter().any(|l| {
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
}
