//! What the lab's links carried beside the I/O: per point, target and lab
//! namespace (client, storage, each load-generator host), the bytes and
//! packets its lab interfaces moved per second over the measured intervals,
//! those bytes against the user data the I/O moved (the wire's overhead,
//! both directions counted), and its TCP segments and retransmissions.

use super::format::TextTable;
use super::relative::Comparison;
use super::vocab::Unit;
use crate::model::{NetSample, Phase, PointResult};

/// One namespace's totals over a point's measured intervals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetTotals {
    /// The namespace's role (`client`, `storage`, `host N`, `client+storage`).
    pub role: String,
    /// Seconds measured.
    pub seconds: f64,
    /// Bytes received plus sent on its lab interfaces.
    pub bytes: u64,
    /// Packets received plus sent.
    pub packets: u64,
    /// TCP segments received plus sent.
    pub segments: u64,
    /// TCP segments retransmitted.
    pub retrans: u64,
    /// User data the point's I/O moved (read + written bytes).
    pub user_bytes: u64,
}

/// Each namespace's totals over the measured intervals of `p`, in the order
/// the namespaces first appear; empty when the run recorded no counters.
pub fn totals(p: &PointResult) -> Vec<NetTotals> {
    let mut out: Vec<NetTotals> = Vec::new();
    for iv in p.intervals.iter().filter(|i| i.phase == Phase::Measure) {
        let user = iv.stats.read.bytes + iv.stats.write.bytes;
        for s in &iv.net {
            let t = match out.iter_mut().position(|t| t.role == s.role) {
                Some(i) => &mut out[i],
                None => {
                    out.push(NetTotals {
                        role: s.role.clone(),
                        ..NetTotals::default()
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            add(t, s, iv.seconds, user);
        }
    }
    out
}

fn add(t: &mut NetTotals, s: &NetSample, seconds: f64, user: u64) {
    t.seconds += seconds;
    t.user_bytes += user;
    for i in &s.interfaces {
        t.bytes += i.rx_bytes + i.tx_bytes;
        t.packets += i.rx_packets + i.tx_packets;
    }
    t.segments += s.tcp.in_segs + s.tcp.out_segs;
    t.retrans += s.tcp.retrans_segs;
}

/// The table of every point's link counters; no rows when no run recorded any.
pub fn network_table(c: &Comparison) -> TextTable {
    let mut rows = Vec::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        for (t, target) in c.targets.iter().enumerate() {
            // The first repeat speaks for the point (repeats run the same way).
            let Some(p) = c.points(k, t).first().copied() else {
                continue;
            };
            for n in totals(p) {
                let per_s = |v: u64| v as f64 / n.seconds.max(1e-9);
                let ratio = (n.user_bytes > 0).then(|| n.bytes as f64 / n.user_bytes as f64);
                let retrans_pct = 100.0 * n.retrans as f64 / n.segments.max(1) as f64;
                rows.push(vec![
                    job.clone(),
                    label.clone(),
                    target.clone(),
                    n.role,
                    Unit::MbS.fmt(per_s(n.bytes) / 1e6),
                    ratio.map_or_else(|| "–".into(), |r| format!("{r:.3}")),
                    Unit::Count.fmt(per_s(n.packets)),
                    Unit::Count.fmt(per_s(n.segments)),
                    format!("{} ({})", n.retrans, Unit::Percent.show(retrans_pct)),
                ]);
            }
        }
    }
    TextTable {
        title: "Network: the lab's links".into(),
        head: [
            "job",
            "load point",
            "target",
            "namespace",
            "wire MB/s (rx + tx)",
            "wire / user bytes",
            "packets/s",
            "TCP segments/s",
            "retransmitted",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: "Read inside each of the lab's network namespaces over the measured intervals: the bytes and packets of its interfaces on the lab's links (Ethernet headers included, as the kernel counts them), both directions, against the user data the I/O moved (a loopback lab counts each byte on `lo` once sent and once received); TCP segments in and out, and those retransmitted.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IfCounters, IntervalRecord, TcpCounters};

    fn sample(role: &str, rx: u64, tx: u64, retrans: u64) -> NetSample {
        NetSample {
            namespace: role.into(),
            role: role.into(),
            interfaces: vec![IfCounters {
                name: "eth".into(),
                rx_bytes: rx,
                rx_packets: 1,
                tx_bytes: tx,
                tx_packets: 1,
                dropped: 0,
            }],
            tcp: TcpCounters {
                in_segs: 10,
                out_segs: 10,
                retrans_segs: retrans,
            },
        }
    }

    #[test]
    fn totals_sum_measured_intervals_per_namespace() {
        let iv = |phase, rx| {
            let mut r = IntervalRecord {
                index: 0,
                phase,
                start_s: 0.0,
                seconds: 1.0,
                stats: Default::default(),
                cpu: Default::default(),
                net: vec![sample("client", rx, 5, 1), sample("storage", 5, rx, 0)],
            };
            r.stats.read.bytes = 1000;
            r
        };
        let p = PointResult {
            intervals: vec![
                iv(Phase::Ramp, 9999),
                iv(Phase::Measure, 1100),
                iv(Phase::Measure, 1100),
            ],
            ..crate::model::test_point()
        };
        let t = totals(&p);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].role.as_str(), t[0].bytes, t[0].user_bytes),
            ("client", 2210, 2000)
        );
        assert_eq!((t[0].retrans, t[0].segments, t[0].seconds), (2, 40, 2.0));
        assert_eq!(t[1].role, "storage");
    }
}
