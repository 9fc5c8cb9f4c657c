//! What bound each load point, judged as it is measured.
//!
//! [`Watch`] is an observer teed beside the point's others: at the point's
//! start and at the end of each ramp interval it takes a reading of the
//! CPU of storlab's threads and of each server's, and of the medium's
//! stations; at the end of each measured interval it takes another. The
//! first and last readings span the measured intervals, so each share
//! covers the same time as the point's figures. [`Watch::bound`] then turns
//! them, with the host's CPU and the link's bytes from the point itself,
//! into a [`Bound`].

use crate::compare::ServerProc;
use crate::lab::media::{MediaInfo, MediaStats};
use crate::linkmodel::{self, Dir};
use crate::model::{Bound, IntervalRecord, Limit, Network, Phase, PointResult, Share};
use crate::runner::Observer;
use crate::stats::{ThreadsCpu, cpu::online_cores};
use crate::target::Target;
use crate::workload::Spec;
use std::time::Instant;

/// One reading of everything a bound is judged from.
#[derive(Clone, Debug)]
struct Reading {
    at: Instant,
    /// storlab's own threads (`None`: on a fleet, or unreadable).
    me: Option<ThreadsCpu>,
    /// Each server's threads, in the contender's order.
    servers: Vec<Option<ThreadsCpu>>,
    /// The medium's counters as its server last published them.
    medium: Option<MediaStats>,
}

/// The observer that takes the readings of one point.
pub struct Watch<'a> {
    servers: &'a [ServerProc],
    media: Option<&'a MediaInfo>,
    /// Judge storlab's own threads (a local run; a fleet's clients are elsewhere).
    local: bool,
    first: Option<Reading>,
    last: Option<Reading>,
}

impl<'a> Watch<'a> {
    /// A watch over `servers` and the lab's medium `media`; `local`: the
    /// engine runs in this process.
    pub fn new(servers: &'a [ServerProc], media: Option<&'a MediaInfo>, local: bool) -> Watch<'a> {
        Watch {
            servers,
            media,
            local,
            first: None,
            last: None,
        }
    }

    fn read(&self) -> Reading {
        Reading {
            at: Instant::now(),
            me: self
                .local
                .then(|| ThreadsCpu::of_pid(std::process::id()).ok())
                .flatten(),
            servers: self
                .servers
                .iter()
                .map(|s| ThreadsCpu::of_pid(s.pid).ok())
                .collect(),
            medium: self.media.and_then(|m| m.media_stats().ok()),
        }
    }

    /// What bound `p` (run on `targets`), from the readings, its host CPU
    /// and its bytes; `net`: the lab's network the run used.
    pub fn bound(&self, p: &PointResult, targets: &[Target], net: Option<&Network>) -> Bound {
        let mut shares = Vec::new();
        let cores = f64::from(online_cores());
        shares.push(Share {
            limit: Limit::Machine,
            share: p.summary.cpu.host_busy_pct / 100.0,
            what: format!("this machine's {cores:.0} CPUs"),
        });
        if let (Some(a), Some(b)) = (&self.first, &self.last) {
            let wall = b.at.duration_since(a.at).as_secs_f64();
            // The readings bracket the measured period only if the intervals
            // reached this observer as they ended; read late together (an
            // aggregator starved of CPU), they would measure a sliver of
            // idle time, so the threads' and the medium's shares are left out.
            let bracketed = wall > 0.0 && wall >= 0.5 * p.summary.seconds;
            if bracketed {
                if let (Some(x), Some(y)) = (&a.me, &b.me) {
                    let u = y.used_since(x);
                    shares.push(Share {
                        limit: Limit::ClientCpu,
                        share: u.busiest_s / wall,
                        what: "storlab's busiest thread".into(),
                    });
                }
                for (i, s) in self.servers.iter().enumerate() {
                    if let (Some(Some(x)), Some(Some(y))) = (a.servers.get(i), b.servers.get(i)) {
                        let u = y.used_since(x);
                        shares.push(Share {
                            limit: Limit::ServerCpu,
                            share: u.busiest_s / wall,
                            what: format!("{}'s busiest thread", s.name),
                        });
                    }
                }
            }
            if bracketed
                && let (Some(x), Some(y)) = (&a.medium, &b.medium)
                && let Ok(shares_of) = y.since(x)
                && let Some(st) = shares_of.busiest()
            {
                shares.push(Share {
                    limit: Limit::Medium,
                    share: st.busy,
                    what: format!("{}'s {}", shares_of.medium, st.name),
                });
            }
        }
        if !self.local {
            // A fleet's clients: their CPU seconds against the engine threads they ran.
            let cpu = p.summary.cpu.proc_user_s + p.summary.cpu.proc_sys_s;
            if p.summary.seconds > 0.0 && p.threads > 0 {
                shares.push(Share {
                    limit: Limit::ClientCpu,
                    share: cpu / p.summary.seconds / p.threads as f64,
                    what: format!("the agents' {} engine threads", p.threads),
                });
            }
        }
        shares.extend(link_share(p, targets, net));
        let rate_capped = p.spec.groups.iter().any(|g| g.access.rate.is_some());
        Bound::from_shares(shares, rate_capped)
    }
}

impl Observer for Watch<'_> {
    fn point_started(&mut self, _spec: &Spec, _intervals: u32) {
        self.first = Some(self.read());
        self.last = None;
    }

    fn interval(&mut self, _spec: &Spec, rec: &IntervalRecord, _intervals: u32) {
        match rec.phase {
            // The measured period starts where the ramp's last interval ends.
            Phase::Ramp => self.first = Some(self.read()),
            Phase::Measure => self.last = Some(self.read()),
        }
    }
}

/// The link's share: the busier direction's user data against what the
/// wire model says the link carries for I/Os of that size, on the lab's
/// shaped link (protocol targets) or the FC or FCoE link a block baseline is
/// capped at. `None` when no target crosses a modelled link.
fn link_share(p: &PointResult, targets: &[Target], net: Option<&Network>) -> Option<Share> {
    let secs = p.summary.seconds;
    if secs <= 0.0 {
        return None;
    }
    let t = targets.first()?;
    let dirs = [
        (Dir::Read, &p.measured.read),
        (Dir::Write, &p.measured.write),
    ];
    let mut best: Option<Share> = None;
    for (dir, d) in dirs {
        if d.ios == 0 {
            continue;
        }
        let size = d.bytes / d.ios;
        let rate = d.bytes as f64 / secs;
        let (cap, what) = match t {
            Target::Fc { link, wire, .. } => (
                linkmodel::lab::block_cap(wire.protocol(), link, size, dir).ok(),
                format!("the {link} link"),
            ),
            _ => {
                let (Some(net), Some(proto)) = (net, t.network_protocol()) else {
                    continue;
                };
                let cap = net
                    .estimate(proto, size, dir)
                    .ok()
                    .flatten()
                    .map(|e| e.payload_bytes_per_s);
                let name = net.link.clone().unwrap_or_else(|| "lab".into());
                (cap, format!("the {name} link"))
            }
        };
        let Some(cap) = cap.filter(|c| *c > 0.0) else {
            continue;
        };
        let share = rate / cap;
        if best.as_ref().is_none_or(|b| share > b.share) {
            best = Some(Share {
                limit: Limit::Link,
                share,
                what,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkmodel::Protocol;

    #[test]
    fn a_block_baseline_capped_at_fc_or_fcoe_is_held_to_its_own_links_rate() {
        for (url, link, protocol) in [
            ("file:/d?fc=8gfc", "8gfc", Protocol::Fc),
            ("file:/d?fcoe=10gbe", "10gbe", Protocol::Fcoe),
        ] {
            let cap = linkmodel::lab::block_cap(protocol, link, 1 << 20, Dir::Read).unwrap();
            // 100 reads of 1 MiB in the time the link takes to carry them.
            let mut p = crate::model::test_point();
            p.measured.read.ios = 100;
            p.measured.read.bytes = 100 << 20;
            p.summary.seconds = (100u64 << 20) as f64 / cap;
            let s = link_share(&p, &[Target::parse(url).unwrap()], None)
                .unwrap_or_else(|| panic!("{url}: no link share"));
            assert_eq!(s.limit, Limit::Link);
            assert!((s.share - 1.0).abs() < 1e-9, "{url}: {}", s.share);
            assert_eq!(s.what, format!("the {link} link"));
        }
    }
}
