//! Link shaping and MTU: every veth end of the lab's links gets a tc `tbf`
//! root qdisc (egress of each end, so both directions of a link are shaped)
//! and the lab's MTU.
//!
//! The links carry what a real wire of their rate carries. tbf counts each
//! packet as the qdisc sees it, the Ethernet header and IP packet (GSO
//! packets with the headers of every segment), while a real link also spends
//! [`WIRE_OVERHEAD`] bytes of line time on every frame (preamble, FCS,
//! inter-frame gap). tbf therefore runs at the rate scaled by
//! (MTU + 14) / (MTU + 38): a full-size frame then takes exactly the line
//! time of a real one, and TCP payload reaches 1448/1538 = 94.1 % of the link
//! rate at MTU 1500 and 8948/9038 = 99.0 % at MTU 9000, as the wire model
//! (src/linkmodel) says a real link does. Smaller frames (ACKs, lone
//! commands) are charged less than on a wire, in the direction that is not
//! the bottleneck of a transfer.
//!
//! Why not a size table (`stab overhead 24`): it adds its overhead once per
//! packet the qdisc sees, and veths carry 64 KiB GSO packets, so it would
//! charge one frame's overhead for 45 (tc-stab(8), "Ethernet cards
//! considerations"). Handing the qdisc single segments (`gso_max_segs 1`)
//! makes the size table exact but costs about five times the CPU: 64 KiB NBD
//! reads at 1 GbE, MTU 1500, took nbdkit and the agent 10.6 s of CPU and the
//! machine 7.8 s of softirq per 12 s run (for 85 MB/s), against 2.4 s and
//! 1.1 s (for 114 MB/s) with GSO, enough to hold a 2-core lab below the rate.

use crate::linkmodel::ethernet::{FCS, IFG, MAC_HEADER, PREAMBLE_SFD};
use crate::process;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The shaping of every link of the lab.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// As given: `1gbe`, `10gbe`, `25gbe` or an explicit rate like `500mbit`.
    pub name: String,
    /// Rate in bits per second.
    pub rate_bps: u64,
    /// tbf bucket size in bytes: 1 ms at the rate, at least [`MIN_BURST`].
    pub burst_bytes: u64,
    /// tbf queue limit in bytes: [`QUEUE_MS`] at the rate, at least [`MIN_LIMIT`].
    pub limit_bytes: u64,
}

/// Smallest bucket: two 64 KiB GSO packets, so tbf never has to split one.
pub const MIN_BURST: u64 = 2 * 65536 + 2 * 1024;

/// Line bytes a real Ethernet frame costs beyond what tbf counts of it (its
/// [`MAC_HEADER`] and the IP packet): preamble and SFD 8, FCS 4,
/// inter-frame gap 12 (IEEE 802.3 clauses 3.2 and 4.4.2), as the wire model
/// counts them.
pub const WIRE_OVERHEAD: u64 = PREAMBLE_SFD + FCS + IFG;

/// Queue depth in milliseconds at the link rate.
pub const QUEUE_MS: u64 = 10;

/// Smallest queue limit: a few TCP sockets' worth of queued segments.
pub const MIN_LIMIT: u64 = 4 << 20;

impl Link {
    /// Parse `1gbe`, `10gbe`, `25gbe` (any `<N>gbe`) or an explicit rate
    /// `<N>[.<F>](bit|kbit|mbit|gbit)` (decimal units, as tc counts).
    pub fn parse(text: &str) -> Result<Link, String> {
        let t = text.trim().to_ascii_lowercase();
        let bad = || {
            format!("link {text:?}: expected 1gbe, 10gbe, 25gbe or a rate like 500mbit, 2.5gbit")
        };
        let (num, mult) = if let Some(n) = t.strip_suffix("gbe") {
            (n, 1e9)
        } else if let Some(n) = t.strip_suffix("gbit") {
            (n, 1e9)
        } else if let Some(n) = t.strip_suffix("mbit") {
            (n, 1e6)
        } else if let Some(n) = t.strip_suffix("kbit") {
            (n, 1e3)
        } else if let Some(n) = t.strip_suffix("bit") {
            (n, 1.0)
        } else {
            return Err(bad());
        };
        let value: f64 = num.parse().map_err(|_| bad())?;
        if !value.is_finite() || value <= 0.0 {
            return Err(bad());
        }
        let rate_bps = (value * mult).round() as u64;
        if !(1_000_000..=400_000_000_000).contains(&rate_bps) {
            return Err(format!(
                "link {text:?}: {rate_bps} bit/s is outside 1mbit..400gbit"
            ));
        }
        Ok(Link::with_rate(&t, rate_bps))
    }

    /// A link of `rate_bps` named `name`, with burst and limit derived from the rate.
    pub fn with_rate(name: &str, rate_bps: u64) -> Link {
        let bytes_per_ms = rate_bps / 8 / 1000;
        Link {
            name: name.to_string(),
            rate_bps,
            burst_bytes: bytes_per_ms.max(MIN_BURST),
            limit_bytes: (bytes_per_ms * QUEUE_MS).max(MIN_LIMIT),
        }
    }

    /// The rate in bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.rate_bps as f64 / 8.0
    }

    /// tbf's rate at `mtu`: the link rate scaled so that a full-size frame,
    /// MTU + 14 bytes as tbf counts it, takes the line time of a real one,
    /// MTU + 38 bytes at the link rate.
    pub fn tbf_rate_bps(&self, mtu: u32) -> u64 {
        let counted = u128::from(mtu) + u128::from(MAC_HEADER);
        let on_wire = counted + u128::from(WIRE_OVERHEAD);
        (u128::from(self.rate_bps) * counted / on_wire) as u64
    }

    /// The arguments after `tc [-n NS]` that shape `dev`'s egress at `mtu`.
    pub fn tc_args(&self, dev: &str, mtu: u32) -> Vec<String> {
        [
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            &format!("{}bit", self.tbf_rate_bps(mtu)),
            "burst",
            &self.burst_bytes.to_string(),
            "limit",
            &self.limit_bytes.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }
}

/// `netns` (None: the root namespace) as the leading arguments of `ip`/`tc`.
fn in_ns(netns: Option<&str>) -> Vec<String> {
    match netns {
        Some(n) => vec!["-n".into(), n.into()],
        None => Vec::new(),
    }
}

/// Shape `dev` (in `netns`, None: the root namespace) with `link` at `mtu`.
pub fn shape(
    tc: &Path,
    netns: Option<&str>,
    dev: &str,
    link: &Link,
    mtu: u32,
) -> Result<(), String> {
    let mut args = in_ns(netns);
    args.extend(link.tc_args(dev, mtu));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    process::run(tc, &refs).map(|_| ())
}

/// Set `dev`'s MTU (in `netns`, None: the root namespace).
pub fn set_mtu(ip: &Path, netns: Option<&str>, dev: &str, mtu: u32) -> Result<(), String> {
    let mut args = in_ns(netns);
    args.extend(["link", "set", "dev", dev, "mtu", &mtu.to_string()].map(String::from));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    process::run(ip, &refs).map(|_| ())
}

/// Check an MTU given on the command line.
pub fn check_mtu(mtu: u32) -> Result<(), String> {
    if (576..=65520).contains(&mtu) {
        Ok(())
    } else {
        Err(format!(
            "MTU {mtu}: must be between 576 and 65520 (usually 1500 or 9000)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_link_names_and_rates() {
        assert_eq!(Link::parse("1gbe").unwrap().rate_bps, 1_000_000_000);
        assert_eq!(Link::parse("10GbE").unwrap().rate_bps, 10_000_000_000);
        assert_eq!(Link::parse("25gbe").unwrap().rate_bps, 25_000_000_000);
        assert_eq!(Link::parse("500mbit").unwrap().rate_bps, 500_000_000);
        assert_eq!(Link::parse("2.5gbit").unwrap().rate_bps, 2_500_000_000);
        for bad in ["", "fast", "0gbe", "-1mbit", "10kbit", "1000gbit", "1g"] {
            let e = Link::parse(bad).unwrap_err();
            assert!(e.contains("link"), "{bad}: {e}");
        }
    }

    #[test]
    fn burst_and_limit_follow_the_rate() {
        let l = Link::parse("1gbe").unwrap();
        assert_eq!(l.burst_bytes, MIN_BURST);
        assert_eq!(l.limit_bytes, MIN_LIMIT);
        let l = Link::parse("25gbe").unwrap();
        assert_eq!(l.burst_bytes, 3_125_000);
        assert_eq!(l.limit_bytes, 31_250_000);
    }

    #[test]
    fn tbf_rate_charges_a_full_frame_its_line_time() {
        let l = Link::parse("1gbe").unwrap();
        // 1514 counted bytes at the tbf rate take as long as 1538 at 1 Gbit/s.
        assert_eq!(l.tbf_rate_bps(1500), 984_395_318);
        assert_eq!(l.tbf_rate_bps(9000), 997_344_545);
        let args = Link::parse("10gbe").unwrap().tc_args("x", 9000);
        assert_eq!(
            args[6..8],
            ["rate".to_string(), "9973445452bit".to_string()]
        );
        // TCP payload then reaches 1448/1538 of the link rate.
        let payload = l.tbf_rate_bps(1500) as f64 * 1448.0 / 1514.0;
        assert!((payload / 1e9 - 1448.0 / 1538.0).abs() < 1e-9);
    }

    #[test]
    fn mtu_range() {
        assert!(check_mtu(1500).is_ok());
        assert!(check_mtu(9000).is_ok());
        assert!(check_mtu(100).unwrap_err().contains("MTU 100"));
    }
}
