//! Where random offsets fall (fio's `random_distribution`): uniformly, or
//! skewed as real VM disks are, with a small hot set taking most of the I/O.
//!
//! A [`Distribution`] is written as fio writes it (`zipf:1.2`,
//! `pareto:0.2`, `normal:10`, `zoned:60/10:30/20:10/70`,
//! `zoned_abs:60/1g:40/3g`) and kept in that form in job files, JSON and
//! the wire. A [`Skew`] draws from it over the region's `units` aligned
//! positions:
//!
//! * **zipf:θ** — position ranks 1..=n with P(k) ∝ k^-θ (θ > 0), drawn by
//!   rejection-inversion (Hörmann and Derflinger, "Rejection-inversion to
//!   generate variates from monotone discrete distributions", 1996): O(1)
//!   per draw, no table.
//! * **pareto:h** — fio's: rank ⌊(n-1)·U^p⌋ with p = ln h / ln(1-h), so the
//!   hottest share h of the positions takes the share 1-h of the I/O
//!   (pareto:0.2 is the 80/20 rule); 0 < h < 1.
//! * For both, ranks are spread over the region by a fixed permutation
//!   (rank · m mod n, m coprime with n): the hot positions are scattered, as
//!   fio scatters them by hashing, not packed at the region's start.
//! * **normal:σ** — fio's: the mean of 12 uniform draws over the region
//!   (Irwin-Hall, near normal with a standard deviation of 1/12 of the
//!   region) plus a uniform jitter σ% of the region wide, halved until it
//!   stays inside; 0 < σ <= 100. Scattered as zipf's ranks are (fio hashes
//!   it too), so it is a skew, not a band: for a contiguous hot band use
//!   the zones.
//! * **zoned:A/S:...** — zone after zone from the region's start, each
//!   taking A% of the I/O over S% of the region (both sum to 100), uniform
//!   inside; **zoned_abs:A/SIZE:...** the same with absolute zone sizes.
//!
//! zipf, pareto and normal take an optional `:center` in 0..=1 (fio's): the
//! region is rotated so the hottest position sits that far into it.

use super::rng::Rng;
use super::units::{format_size, parse_size};
use super::validate::SpecError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What [`Distribution::parse`] accepts, for errors.
pub const ALLOWED: &str = "random, zipf:THETA (THETA > 0), pareto:H (0 < H < 1), normal:SIGMA \
     (SIGMA a % of the region, 0 < SIGMA <= 100), each with an optional :CENTER in 0..=1, \
     zoned:ACCESS%/SIZE%:... (each column summing to 100) or zoned_abs:ACCESS%/SIZE:... \
     (ACCESS summing to 100)";

/// How random offsets are distributed over the region.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Distribution {
    /// Every aligned position equally likely (fio's `random`).
    #[default]
    Uniform,
    /// Zipf with exponent `theta`.
    Zipf {
        /// The exponent, > 0.
        theta: f64,
        /// Where the hottest position sits, 0..=1 of the region; `None`: at its start.
        center: Option<f64>,
    },
    /// fio's Pareto with share `h`.
    Pareto {
        /// The hot share, 0 < h < 1.
        h: f64,
        /// As for zipf.
        center: Option<f64>,
    },
    /// fio's normal, its jitter `sigma_pct`% of the region wide.
    Normal {
        /// The jitter's width, % of the region.
        sigma_pct: f64,
        /// As for zipf.
        center: Option<f64>,
    },
    /// Zones from the region's start: (access %, size).
    Zoned(Vec<(u32, ZoneSize)>),
}

/// The size of one zone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneSize {
    /// A percentage of the region (`zoned`).
    Pct(u32),
    /// Bytes (`zoned_abs`).
    Bytes(u64),
}

impl Distribution {
    /// Whether this is the uniform distribution (left out of JSON).
    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }

    /// Parse fio's spelling; errors name `key` and the allowed forms.
    pub fn parse(key: &str, text: &str) -> Result<Self, SpecError> {
        let t = text.trim();
        let bad = |why: &str| {
            let allowed = if why.is_empty() {
                ALLOWED.to_string()
            } else {
                format!("{why}; {ALLOWED}")
            };
            SpecError::invalid(key, text, allowed)
        };
        let mut parts = t.split(':');
        let kind = parts.next().unwrap_or_default();
        let rest: Vec<&str> = parts.collect();
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let center = |rest: &[&str]| -> Result<Option<f64>, SpecError> {
            match rest {
                [] => Ok(None),
                [c] => match num(c) {
                    Some(v) if (0.0..=1.0).contains(&v) => Ok(Some(v)),
                    _ => Err(bad("the center is in 0..=1")),
                },
                _ => Err(bad("one parameter and an optional center")),
            }
        };
        match kind {
            "random" if rest.is_empty() => Ok(Distribution::Uniform),
            "zipf" => match rest.split_first() {
                Some((v, c)) => match num(v) {
                    Some(theta) if theta > 0.0 => Ok(Distribution::Zipf {
                        theta,
                        center: center(c)?,
                    }),
                    _ => Err(bad("zipf's theta is > 0, e.g. zipf:1.2")),
                },
                None => Err(bad("zipf's theta is > 0, e.g. zipf:1.2")),
            },
            "pareto" => match rest.split_first() {
                Some((v, c)) => match num(v) {
                    Some(h) if h > 0.0 && h < 1.0 => Ok(Distribution::Pareto {
                        h,
                        center: center(c)?,
                    }),
                    _ => Err(bad("pareto's h is in (0, 1), e.g. pareto:0.2")),
                },
                None => Err(bad("pareto's h is in (0, 1), e.g. pareto:0.2")),
            },
            "normal" | "gauss" => match rest.split_first() {
                Some((v, c)) => match num(v) {
                    Some(s) if s > 0.0 && s <= 100.0 => Ok(Distribution::Normal {
                        sigma_pct: s,
                        center: center(c)?,
                    }),
                    _ => Err(bad(
                        "normal's sigma is a % of the region in (0, 100], e.g. normal:10",
                    )),
                },
                None => Err(bad(
                    "normal's sigma is a % of the region in (0, 100], e.g. normal:10",
                )),
            },
            "zoned" | "zoned_abs" => {
                let abs = kind == "zoned_abs";
                if rest.is_empty() {
                    return Err(bad("at least one zone"));
                }
                let mut zones = Vec::new();
                for z in &rest {
                    if z.contains(',') || z.trim_start().starts_with(['r', 'w', 't']) {
                        return Err(bad(
                            "one set of zones for every direction (no r:/w:/t: lists)",
                        ));
                    }
                    let Some((a, s)) = z.split_once('/') else {
                        return Err(bad("each zone is ACCESS/SIZE"));
                    };
                    let access = a.trim().parse::<u32>().ok().filter(|&a| a <= 100);
                    let Some(access) = access else {
                        return Err(bad("a zone's access is a whole % in 0..=100"));
                    };
                    let size = if abs {
                        match parse_size(s) {
                            Ok(b) if b > 0 => ZoneSize::Bytes(b),
                            _ => return Err(bad("a zoned_abs zone's size is a size > 0, e.g. 1g")),
                        }
                    } else {
                        match s.trim().parse::<u32>() {
                            Ok(p) if (1..=100).contains(&p) => ZoneSize::Pct(p),
                            _ => return Err(bad("a zone's size is a whole % in 1..=100")),
                        }
                    };
                    zones.push((access, size));
                }
                if zones.iter().map(|z| z.0).sum::<u32>() != 100 {
                    return Err(bad("the zones' access shares sum to 100"));
                }
                let pct: u32 = zones
                    .iter()
                    .map(|z| match z.1 {
                        ZoneSize::Pct(p) => p,
                        ZoneSize::Bytes(_) => 0,
                    })
                    .sum();
                if !abs && pct != 100 {
                    return Err(bad("the zones' sizes sum to 100"));
                }
                Ok(Distribution::Zoned(zones))
            }
            _ => Err(bad("")),
        }
    }

    /// Bytes the zones of a `zoned_abs` distribution span (0 for the others):
    /// the region must hold them.
    pub fn zones_bytes(&self) -> u64 {
        match self {
            Distribution::Zoned(z) => z
                .iter()
                .map(|z| match z.1 {
                    ZoneSize::Bytes(b) => b,
                    ZoneSize::Pct(_) => 0,
                })
                .sum(),
            _ => 0,
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let center = |f: &mut fmt::Formatter<'_>, c: &Option<f64>| match c {
            Some(c) => write!(f, ":{c}"),
            None => Ok(()),
        };
        match self {
            Distribution::Uniform => f.write_str("random"),
            Distribution::Zipf { theta, center: c } => {
                write!(f, "zipf:{theta}")?;
                center(f, c)
            }
            Distribution::Pareto { h, center: c } => {
                write!(f, "pareto:{h}")?;
                center(f, c)
            }
            Distribution::Normal {
                sigma_pct,
                center: c,
            } => {
                write!(f, "normal:{sigma_pct}")?;
                center(f, c)
            }
            Distribution::Zoned(zones) => {
                let abs = zones.iter().any(|z| matches!(z.1, ZoneSize::Bytes(_)));
                f.write_str(if abs { "zoned_abs" } else { "zoned" })?;
                for (a, s) in zones {
                    match s {
                        ZoneSize::Pct(p) => write!(f, ":{a}/{p}")?,
                        ZoneSize::Bytes(b) => {
                            write!(f, ":{a}/{}", format_size(*b).replace(' ', ""))?
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

impl Serialize for Distribution {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Distribution::parse("random_distribution", &text).map_err(serde::de::Error::custom)
    }
}

/// A sampler of one distribution over `units` aligned positions.
#[derive(Clone, Debug)]
pub struct Skew {
    units: u64,
    kind: Kind,
    /// Rotation applied last (the center), in positions.
    shift: u64,
}

#[derive(Clone, Debug)]
enum Kind {
    Zipf(Zipf, Spread),
    Pareto {
        pow: f64,
        spread: Spread,
    },
    Normal {
        jitter: u64,
        spread: Spread,
    },
    /// Per zone: cumulative access weight (of 100), first position, positions.
    Zones(Vec<(u64, u64, u64)>),
}

/// A fixed permutation of `0..n`: `r · mult mod n`, `mult` coprime with `n`.
#[derive(Clone, Copy, Debug)]
struct Spread {
    n: u64,
    mult: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Spread {
    fn new(n: u64) -> Self {
        // Near n times the golden ratio's fraction, so neighbouring ranks
        // land far apart; the first coprime value from there.
        let mut mult = ((n as f64 * 0.618_033_988_75) as u64).max(1);
        while gcd(mult, n) != 1 {
            mult += 1;
        }
        Spread { n, mult }
    }
    fn at(&self, rank: u64) -> u64 {
        ((rank as u128 * self.mult as u128) % self.n as u128) as u64
    }
}

/// Uniform draws averaged for fio's normal.
const GAUSS_DRAWS: u64 = 12;

/// A uniform double in (0, 1).
fn open01(rng: &mut Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// Zipf over ranks 1..=n by rejection-inversion.
#[derive(Clone, Copy, Debug)]
struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    thresh: f64,
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// (e^x - 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

impl Zipf {
    fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            thresh: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n as f64 + 0.5);
        z.thresh = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }
    /// x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// An antiderivative of h: (x^(1-s) - 1) / (1 - s), ln x at s = 1.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (helper1(t) * y).exp()
    }
    /// A rank in 1..=n.
    fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + open01(rng) * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.thresh || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

impl Skew {
    /// A sampler of `d` over `units` positions (at least 1); `None` for the
    /// uniform distribution (the generator's own fast path). `unit` is the
    /// bytes of one position, for `zoned_abs`'s sizes.
    pub fn new(d: &Distribution, units: u64, unit: u64) -> Option<Self> {
        let n = units.max(1);
        let shift = |c: &Option<f64>| c.map_or(0, |c| ((c * n as f64) as u64).min(n - 1));
        let (kind, shift) = match d {
            Distribution::Uniform => return None,
            Distribution::Zipf { theta, center } => (
                Kind::Zipf(Zipf::new(n, *theta), Spread::new(n)),
                shift(center),
            ),
            Distribution::Pareto { h, center } => (
                Kind::Pareto {
                    pow: h.ln() / (1.0 - h).ln(),
                    spread: Spread::new(n),
                },
                shift(center),
            ),
            Distribution::Normal { sigma_pct, center } => (
                Kind::Normal {
                    jitter: (sigma_pct / 100.0 * n as f64).ceil() as u64,
                    spread: Spread::new(n),
                },
                shift(center),
            ),
            Distribution::Zoned(zones) => {
                let mut out = Vec::new();
                let (mut cum, mut start) = (0u64, 0u64);
                for &(access, size) in zones {
                    let len = match size {
                        ZoneSize::Pct(p) => (n as u128 * p as u128 / 100) as u64,
                        ZoneSize::Bytes(b) => b / unit.max(1),
                    };
                    let len = len.clamp(1, n.saturating_sub(start).max(1));
                    cum += access as u64;
                    if access > 0 {
                        out.push((cum, start.min(n - 1), len));
                    }
                    start += len;
                }
                (Kind::Zones(out), 0)
            }
        };
        Some(Skew {
            units: n,
            kind,
            shift,
        })
    }

    /// One position in `0..units`.
    pub fn unit(&self, rng: &mut Rng) -> u64 {
        let n = self.units;
        let p = match &self.kind {
            Kind::Zipf(z, spread) => spread.at(z.sample(rng) - 1),
            Kind::Pareto { pow, spread } => {
                let r = ((n - 1) as f64 * open01(rng).powf(*pow)) as u64;
                spread.at(r.min(n - 1))
            }
            Kind::Normal { jitter, spread } => {
                let sum: u64 = (0..GAUSS_DRAWS).map(|_| rng.below(n + 1)).sum();
                let mean = sum.div_ceil(GAUSS_DRAWS) as i64;
                let mut dev = match *jitter {
                    0 => 0,
                    j => rng.below(j) as i64 - (j / 2) as i64,
                };
                while mean + dev < 0 || mean + dev >= n as i64 {
                    dev /= 2;
                }
                spread.at(((mean + dev) as u64).min(n - 1))
            }
            Kind::Zones(zones) => {
                let w = rng.below(100);
                let z = zones
                    .iter()
                    .find(|z| w < z.0)
                    .or(zones.last())
                    .expect("a zone with access");
                z.1 + rng.below(z.2)
            }
        };
        (p + self.shift) % n
    }
}

#[cfg(test)]
mod tests;
