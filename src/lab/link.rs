//! Link shaping and MTU: every veth end of the lab's links gets a tc `tbf`
//! root qdisc at the link rate (egress of each end, so both directions of a
//! link are shaped) and the lab's MTU.
//!
//! tbf counts each packet's length as the qdisc sees it: the Ethernet header
//! and the IP packet (GSO packets with the headers of every segment), not the
//! preamble, inter-frame gap or FCS of a real wire. TCP payload can therefore
//! reach 1448/1514 = 95.6 % of the rate at MTU 1500 and 8948/9014 = 99.3 % at
//! MTU 9000.

use super::process;
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

    /// The arguments after `tc [-n NS]` that shape `dev`'s egress.
    pub fn tc_args(&self, dev: &str) -> Vec<String> {
        [
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            &format!("{}bit", self.rate_bps),
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

/// Shape `dev` (in `netns`, None: the root namespace) with `link`.
pub fn shape(tc: &Path, netns: Option<&str>, dev: &str, link: &Link) -> Result<(), String> {
    let mut args = in_ns(netns);
    args.extend(link.tc_args(dev));
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
        assert_eq!(
            Link::parse("10gbe").unwrap().tc_args("x")[6..8],
            ["rate".to_string(), "10000000000bit".to_string()]
        );
    }

    #[test]
    fn mtu_range() {
        assert!(check_mtu(1500).is_ok());
        assert!(check_mtu(9000).is_ok());
        assert!(check_mtu(100).unwrap_err().contains("MTU 100"));
    }
}
