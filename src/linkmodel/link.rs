//! Links: what a link's signalling rate and line code leave for frames.
//!
//! A link is counted in the bytes its frames may occupy per second: the
//! signalling rate (baud, all lanes together) times the line code's
//! efficiency, over 8. For Ethernet that is the MAC data rate, exactly the
//! nominal rate at every speed (the PCS codes run faster than the MAC rate
//! by the code's overhead); for Fibre Channel it is below the nominal "N Gb"
//! (4GFC signals 4.25 GBd with 8b/10b: 425 MB/s of frames and idles).

use super::ModelError;
use serde::Serialize;

/// What a link carries: Ethernet frames or Fibre Channel frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Medium {
    /// IEEE 802.3 Ethernet.
    Ethernet,
    /// Fibre Channel (FC-FS framing).
    Fc,
}

/// A line code: `data_bits` of data sent as `code_bits` on the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Encoding {
    /// Its name, e.g. `8b/10b`.
    pub name: &'static str,
    /// Data bits per code word.
    pub data_bits: u64,
    /// Line bits per code word.
    pub code_bits: u64,
}

impl Encoding {
    /// No line code: the rate is already a data rate (a shaped lab link).
    pub const NONE: Encoding = Encoding {
        name: "none (a data rate)",
        data_bits: 1,
        code_bits: 1,
    };
    /// 8b/10b: IEEE 802.3 clause 36 (1000BASE-X), FC-FS/FC-PI for 1/2/4/8GFC.
    pub const B8B10B: Encoding = Encoding {
        name: "8b/10b",
        data_bits: 8,
        code_bits: 10,
    };
    /// 64b/66b: IEEE 802.3 clauses 49, 82 and 107 (10/25/40/100GBASE-R),
    /// FC-FS-3/FC-PI-5 for 16GFC.
    pub const B64B66B: Encoding = Encoding {
        name: "64b/66b",
        data_bits: 64,
        code_bits: 66,
    };
    /// 256b/257b transcoding plus RS(528,514) FEC, 32GFC (FC-PI-6, FC-FS-5):
    /// 256/257 x 514/528 is exactly 64/66, so 32GFC keeps 16GFC's efficiency
    /// at twice the baud.
    pub const B256B257B_RS_FEC: Encoding = Encoding {
        name: "256b/257b + RS(528,514) FEC",
        data_bits: 256 * 514,
        code_bits: 257 * 528,
    };

    /// Data bits per line bit.
    pub fn efficiency(&self) -> f64 {
        self.data_bits as f64 / self.code_bits as f64
    }
}

/// A link of a given speed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    /// Its name: `1gbe` .. `100gbe`, `1gfc` .. `32gfc`, or a lab link's name.
    pub name: String,
    /// Ethernet or Fibre Channel.
    pub medium: Medium,
    /// Signalling rate of all lanes together, in baud (symbols per second).
    pub baud: f64,
    /// The line code.
    pub encoding: Encoding,
    /// Where the rate and code come from.
    pub source: &'static str,
}

/// One catalogued speed: name, medium, baud per lane, lanes, code, source.
type Speed = (&'static str, Medium, f64, u32, Encoding, &'static str);

/// Every catalogued link, Ethernet first, slowest first.
const SPEEDS: [Speed; 11] = [
    (
        "1gbe",
        Medium::Ethernet,
        1.25e9,
        1,
        Encoding::B8B10B,
        "IEEE 802.3 clause 36, 1000BASE-X at 1.25 GBd (1000BASE-T, clause 40, carries the same 1 Gb/s MAC rate as 4D-PAM5 on 4 pairs)",
    ),
    (
        "10gbe",
        Medium::Ethernet,
        10.3125e9,
        1,
        Encoding::B64B66B,
        "IEEE 802.3 clause 49, 10GBASE-R at 10.3125 GBd",
    ),
    (
        "25gbe",
        Medium::Ethernet,
        25.781_25e9,
        1,
        Encoding::B64B66B,
        "IEEE 802.3 clause 107, 25GBASE-R at 25.78125 GBd",
    ),
    (
        "40gbe",
        Medium::Ethernet,
        10.3125e9,
        4,
        Encoding::B64B66B,
        "IEEE 802.3 clause 82, 40GBASE-R on 4 lanes of 10.3125 GBd",
    ),
    (
        "100gbe",
        Medium::Ethernet,
        25.781_25e9,
        4,
        Encoding::B64B66B,
        "IEEE 802.3 clause 82, 100GBASE-R on 4 lanes of 25.78125 GBd (clause 91's RS-FEC transcodes to 256b/257b and keeps the MAC rate)",
    ),
    (
        "1gfc",
        Medium::Fc,
        1.0625e9,
        1,
        Encoding::B8B10B,
        "FC-PI, 1GFC at 1.0625 GBd",
    ),
    (
        "2gfc",
        Medium::Fc,
        2.125e9,
        1,
        Encoding::B8B10B,
        "FC-PI-2, 2GFC at 2.125 GBd",
    ),
    (
        "4gfc",
        Medium::Fc,
        4.25e9,
        1,
        Encoding::B8B10B,
        "FC-PI-4, 4GFC at 4.25 GBd",
    ),
    (
        "8gfc",
        Medium::Fc,
        8.5e9,
        1,
        Encoding::B8B10B,
        "FC-PI-4, 8GFC at 8.5 GBd",
    ),
    (
        "16gfc",
        Medium::Fc,
        14.025e9,
        1,
        Encoding::B64B66B,
        "FC-PI-5, 16GFC at 14.025 GBd",
    ),
    (
        "32gfc",
        Medium::Fc,
        28.05e9,
        1,
        Encoding::B256B257B_RS_FEC,
        "FC-PI-6, 32GFC at 28.05 GBd",
    ),
];

impl Link {
    /// Every catalogued link's name, for error messages.
    pub fn allowed() -> String {
        SPEEDS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
    }

    /// Every catalogued link, Ethernet first, slowest first.
    pub fn catalogue() -> Vec<Link> {
        SPEEDS.iter().map(Link::from_speed).collect()
    }

    /// The catalogued link `name` (case does not matter).
    pub fn named(name: &str) -> Result<Link, ModelError> {
        let want = name.trim().to_ascii_lowercase();
        SPEEDS
            .iter()
            .find(|s| s.0 == want)
            .map(Link::from_speed)
            .ok_or_else(|| ModelError::UnknownLink(name.to_string()))
    }

    /// An Ethernet link whose MAC data rate is `rate_bps`, as the lab shapes
    /// its veth links (tc's rate is a data rate: no line code to remove).
    pub fn ethernet_at(name: &str, rate_bps: u64) -> Link {
        Link {
            name: name.to_string(),
            medium: Medium::Ethernet,
            baud: rate_bps as f64,
            encoding: Encoding::NONE,
            source: "a shaped lab link: tc tbf at this rate, counting each frame's preamble, FCS and gap (src/lab/link.rs)",
        }
    }

    fn from_speed(s: &Speed) -> Link {
        let (name, medium, baud, lanes, encoding, source) = *s;
        Link {
            name: name.to_string(),
            medium,
            baud: baud * f64::from(lanes),
            encoding,
            source,
        }
    }

    /// Bytes per second the line carries after its code: frames, their
    /// delimiters and the gaps or idles between them.
    pub fn line_bytes_per_s(&self) -> f64 {
        self.baud * self.encoding.efficiency() / 8.0
    }

    /// The line's data rate in bits per second.
    pub fn data_bits_per_s(&self) -> f64 {
        self.baud * self.encoding.efficiency()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(name: &str) -> f64 {
        Link::named(name).unwrap().data_bits_per_s()
    }

    #[test]
    fn ethernet_codes_leave_exactly_the_nominal_mac_rate() {
        for (name, nominal) in [
            ("1gbe", 1e9),
            ("10gbe", 10e9),
            ("25gbe", 25e9),
            ("40gbe", 40e9),
            ("100gbe", 100e9),
        ] {
            let got = bits(name);
            assert!((got - nominal).abs() < 1.0, "{name}: {got}");
        }
    }

    #[test]
    fn fc_data_rates_follow_baud_and_code() {
        // 8b/10b: a tenth of the baud in bytes; 64b/66b and 32GFC's
        // transcoding with FEC: 1700 and 3400 MB/s, the "1600" and "3200"
        // generations with their headroom.
        for (name, mb_s) in [
            ("1gfc", 106.25),
            ("2gfc", 212.5),
            ("4gfc", 425.0),
            ("8gfc", 850.0),
            ("16gfc", 1700.0),
            ("32gfc", 3400.0),
        ] {
            let got = Link::named(name).unwrap().line_bytes_per_s() / 1e6;
            assert!((got - mb_s).abs() < 1e-6, "{name}: {got}");
        }
        assert_eq!(
            Encoding::B256B257B_RS_FEC.efficiency(),
            Encoding::B64B66B.efficiency()
        );
    }

    #[test]
    fn names_are_case_blind_and_unknown_ones_list_the_allowed() {
        assert_eq!(Link::named("10GbE").unwrap().name, "10gbe");
        let e = Link::named("3gfc").unwrap_err().to_string();
        assert!(e.contains("\"3gfc\"") && e.contains("32gfc"), "{e}");
        assert_eq!(Link::catalogue().len(), 11);
    }
}
