//! What bound a load point's figures: the resource that was saturated, named
//! from what storlab measured beside the I/O (the medium's busy share, a
//! link's bytes against what the wire model says it carries, the busiest
//! thread of storlab and of each server, the host's CPUs). A point whose
//! machine was saturated is flagged: its figure measures this machine, not
//! the protocol or the storage.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A resource that can bound a load point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The emulated medium: its busiest station (devices, destage, log
    /// device, host interface) against its own model.
    Medium,
    /// A link: the lab's shaped Ethernet, or the FC link a block baseline is
    /// capped at, against the wire model's payload rate.
    Link,
    /// storlab itself: its busiest engine thread (a fleet: its agents' CPU).
    ClientCpu,
    /// A server process of the target: its busiest thread.
    ServerCpu,
    /// This machine: every CPU busy, so clients, servers and the media
    /// layer compete for them.
    Machine,
    /// The workload's own rate cap (`rate_iops`, an open-loop curve point).
    Rate,
    /// Nothing saturated: the outstanding I/Os and each one's latency set the
    /// rate (a closed loop below every resource's limit).
    Latency,
}

impl Limit {
    /// The name shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Medium => "medium",
            Limit::Link => "link",
            Limit::ClientCpu => "client CPU",
            Limit::ServerCpu => "server CPU",
            Limit::Machine => "machine",
            Limit::Rate => "rate cap",
            Limit::Latency => "latency",
        }
    }
}

/// One candidate's measured use of its capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Which resource.
    pub limit: Limit,
    /// Used share of its capacity, 0 to 1 (a little over 1 from rounding).
    pub share: f64,
    /// What exactly was measured ("array-15k's devices", "tgtd's busiest
    /// thread", "the 10gbe link at nfs3's payload rate").
    pub what: String,
}

/// What bound one load point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// The bounding resource.
    pub by: Limit,
    /// The figure that decided, in words ("array-15k's devices 97% busy").
    pub detail: String,
    /// Every CPU of this machine was busy (at least [`MACHINE_BUSY`]): the
    /// figure measures this machine, wherever it is shown.
    pub machine: bool,
    /// Every candidate measured, busiest first.
    pub shares: Vec<Share>,
}

/// A resource at or above this share of its capacity is saturated.
pub const SATURATED: f64 = 0.85;

/// The host's CPUs at or above this share busy flag the point machine-bound:
/// the same share as every other resource's saturation (a RAM lab over
/// loopback, which can go no faster than these CPUs, measured 89.7% of two).
pub const MACHINE_BUSY: f64 = SATURATED;

impl Bound {
    /// Name the bound from `shares` (the host's CPUs as a [`Limit::Machine`]
    /// share among them); `rate_capped`: the workload caps its own rate.
    ///
    /// The rule: a saturated medium or link bounds the point whatever the
    /// CPUs did (their busy time is the emulated hardware's own clock); with
    /// the machine saturated, a busy client or server thread is the machine's
    /// contention, so the point is machine-bound; otherwise the busiest
    /// saturated client or server thread; with nothing saturated, the rate
    /// cap if the workload has one, else latency.
    pub fn from_shares(mut shares: Vec<Share>, rate_capped: bool) -> Bound {
        shares.sort_by(|a, b| b.share.total_cmp(&a.share));
        let host = shares
            .iter()
            .find(|s| s.limit == Limit::Machine)
            .map_or(0.0, |s| s.share);
        let machine = host >= MACHINE_BUSY;
        let saturated = |l: &[Limit]| {
            shares
                .iter()
                .find(|s| l.contains(&s.limit) && s.share >= SATURATED)
        };
        let pct = |s: &Share| format!("{} {:.0}% busy", s.what, 100.0 * s.share);
        let (by, detail) = if let Some(s) = saturated(&[Limit::Medium, Limit::Link]) {
            (s.limit, pct(s))
        } else if machine {
            let s = shares
                .iter()
                .find(|s| s.limit == Limit::Machine)
                .expect("a machine share");
            (Limit::Machine, pct(s))
        } else if let Some(s) = saturated(&[Limit::ClientCpu, Limit::ServerCpu]) {
            (s.limit, pct(s))
        } else {
            let busiest = shares
                .iter()
                .find(|s| s.limit != Limit::Machine)
                .map(|s| format!(" (busiest: {})", pct(s)))
                .unwrap_or_default();
            if rate_capped {
                (Limit::Rate, format!("the workload's rate cap{busiest}"))
            } else {
                (
                    Limit::Latency,
                    format!("nothing saturated{busiest}: outstanding I/Os and their latency"),
                )
            }
        };
        Bound {
            by,
            detail,
            machine,
            shares,
        }
    }

    /// The short form for a table cell: "medium 97%", "machine!" when the
    /// machine was saturated and something else is named, "latency".
    pub fn cell(&self) -> String {
        let share = self
            .shares
            .iter()
            .find(|s| s.limit == self.by)
            .map(|s| format!(" {:.0}%", 100.0 * s.share))
            .unwrap_or_default();
        let flag = if self.machine && self.by != Limit::Machine {
            " (machine!)"
        } else {
            ""
        };
        format!("{}{share}{flag}", self.by.as_str())
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.by.as_str(), self.detail)?;
        if self.machine && self.by != Limit::Machine {
            let host = self
                .shares
                .iter()
                .find(|s| s.limit == Limit::Machine)
                .map_or(0.0, |s| s.share);
            write!(
                f,
                "; the machine was saturated too (CPUs {:.0}% busy): the figure measures this machine",
                100.0 * host
            )?;
        } else if self.by == Limit::Machine {
            f.write_str(": the figure measures this machine, not the protocol or the storage")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(limit: Limit, share: f64) -> Share {
        Share {
            limit,
            share,
            what: limit.as_str().into(),
        }
    }

    #[test]
    fn a_saturated_medium_bounds_the_point_even_on_a_busy_machine() {
        let b = Bound::from_shares(
            vec![
                s(Limit::Machine, 0.95),
                s(Limit::Medium, 0.97),
                s(Limit::ClientCpu, 0.9),
            ],
            false,
        );
        assert_eq!(b.by, Limit::Medium);
        assert!(b.machine);
        assert_eq!(b.cell(), "medium 97% (machine!)");
        assert!(b.to_string().contains("measures this machine"), "{b}");
    }

    #[test]
    fn a_busy_thread_on_a_saturated_machine_is_the_machine() {
        let b = Bound::from_shares(
            vec![
                s(Limit::Machine, 0.99),
                s(Limit::Medium, 0.2),
                s(Limit::ServerCpu, 0.95),
            ],
            false,
        );
        assert_eq!(b.by, Limit::Machine);
        assert_eq!(b.cell(), "machine 99%");
        let b = Bound::from_shares(
            vec![s(Limit::Machine, 0.6), s(Limit::ServerCpu, 0.95)],
            false,
        );
        assert_eq!((b.by, b.machine), (Limit::ServerCpu, false));
    }

    #[test]
    fn nothing_saturated_is_latency_or_the_rate_cap() {
        let shares = vec![s(Limit::Machine, 0.3), s(Limit::Medium, 0.5)];
        let b = Bound::from_shares(shares.clone(), false);
        assert_eq!(b.by, Limit::Latency);
        assert!(b.detail.contains("medium 50% busy"), "{}", b.detail);
        assert_eq!(Bound::from_shares(shares, true).by, Limit::Rate);
        assert_eq!(Bound::from_shares(Vec::new(), false).by, Limit::Latency);
    }

    #[test]
    fn it_reads_back_as_written() {
        let b = Bound::from_shares(vec![s(Limit::Link, 0.93)], false);
        let j = serde_json::to_string(&b).unwrap();
        assert!(j.contains("\"by\":\"link\""), "{j}");
        assert_eq!(serde_json::from_str::<Bound>(&j).unwrap(), b);
    }
}
