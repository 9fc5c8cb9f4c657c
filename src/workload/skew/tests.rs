//! Each distribution's draws against its definition.

use super::*;

const DRAWS: usize = 400_000;

/// Draw `DRAWS` positions of `d` over `n` units; the share of each.
fn shares(d: &Distribution, n: u64, seed: u64) -> Vec<f64> {
    let skew = Skew::new(d, n, 4096).expect("a skewed distribution");
    let mut rng = Rng::new(seed);
    let mut counts = vec![0u64; n as usize];
    for _ in 0..DRAWS {
        let u = skew.unit(&mut rng);
        assert!(u < n, "{d}: position {u} past {n}");
        counts[u as usize] += 1;
    }
    counts.iter().map(|&c| c as f64 / DRAWS as f64).collect()
}

/// Position of each rank (0-based) under zipf's and pareto's spread.
fn by_rank(got: &[f64]) -> Vec<f64> {
    let n = got.len() as u64;
    let s = Spread::new(n);
    (0..n).map(|r| got[s.at(r) as usize]).collect()
}

fn parse(s: &str) -> Distribution {
    Distribution::parse("random_distribution", s).unwrap()
}

#[test]
fn the_spread_is_a_permutation() {
    for n in [1u64, 2, 10, 1000, 1024, 4096 * 3, 65_537] {
        let s = Spread::new(n);
        let mut seen = vec![false; n as usize];
        for r in 0..n {
            let p = s.at(r) as usize;
            assert!(!seen[p], "n {n}: {p} twice");
            seen[p] = true;
        }
    }
}

#[test]
fn zipf_ranks_follow_k_to_the_minus_theta() {
    let n = 1000u64;
    for theta in [0.8, 1.0, 1.2, 2.0] {
        let got = by_rank(&shares(&parse(&format!("zipf:{theta}")), n, 5));
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
        let want: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta) / norm).collect();
        for k in 0..5 {
            let rel = (got[k] - want[k]).abs() / want[k];
            assert!(
                rel < 0.03,
                "theta {theta}, rank {}: {} against {}",
                k + 1,
                got[k],
                want[k]
            );
        }
        let tv: f64 = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .sum::<f64>()
            / 2.0;
        assert!(tv < 0.02, "theta {theta}: total variation {tv}");
    }
}

#[test]
fn pareto_gives_its_hot_share_the_rest_of_the_io() {
    let n = 1000u64;
    for h in [0.2, 0.1, 0.35] {
        let got = by_rank(&shares(&parse(&format!("pareto:{h}")), n, 6));
        // fio's definition: rank floor((n-1) U^p), p = ln h / ln(1-h), so
        // P(rank < x (n-1)) = x^(1/p).
        let p = f64::ln(h) / f64::ln(1.0 - h);
        for x in [0.01, 0.05, h, 0.5] {
            let k = (x * (n - 1) as f64).ceil() as usize;
            let got_cdf: f64 = got[..k].iter().sum();
            let want = (k as f64 / (n - 1) as f64).powf(1.0 / p);
            assert!(
                (got_cdf - want).abs() < 0.01,
                "h {h}, x {x}: {got_cdf} against {want}"
            );
        }
        let hot: f64 = got[..(h * n as f64) as usize].iter().sum();
        assert!(
            (hot - (1.0 - h)).abs() < 0.01,
            "h {h}: the hot share took {hot}"
        );
    }
}

#[test]
fn normal_is_fios_near_normal_skew() {
    let n = 10_000u64;
    for sigma in [10.0, 40.0] {
        let got = by_rank(&shares(&parse(&format!("normal:{sigma}")), n, 7));
        // fio's: the mean of 12 uniforms over the region plus a uniform
        // jitter sigma% of it wide: mean n/2, variance (n/12)^2 + w^2/12.
        let w = sigma / 100.0 * n as f64;
        let sd = ((n as f64 / 12.0).powi(2) + w * w / 12.0).sqrt();
        let mean: f64 = got.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
        let var: f64 = got
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64 - mean).powi(2) * p)
            .sum();
        assert!(
            (mean / n as f64 - 0.5).abs() < 0.005,
            "sigma {sigma}: mean {mean}"
        );
        assert!(
            (var.sqrt() / sd - 1.0).abs() < 0.02,
            "sigma {sigma}: sd {} against {sd}",
            var.sqrt()
        );
        let within = |k: f64| -> f64 {
            let (lo, hi) = ((mean - k * sd) as usize, (mean + k * sd) as usize);
            got[lo..hi].iter().sum()
        };
        // Near normal while the jitter is narrow: one standard deviation
        // holds about 68% (a wide jitter flattens it toward uniform).
        if sigma <= 10.0 {
            assert!(
                (within(1.0) - 0.6827).abs() < 0.02,
                "sigma {sigma}: {}",
                within(1.0)
            );
        }
    }
}

#[test]
fn zones_take_their_shares_uniformly_inside() {
    let n = 1000u64;
    for (spec, bounds) in [
        (
            "zoned:60/10:30/20:10/70",
            vec![(0usize, 100usize, 0.6), (100, 300, 0.3), (300, 1000, 0.1)],
        ),
        // 4 KiB positions: 400 KiB, 800 KiB, then the rest unused.
        (
            "zoned_abs:50/400k:50/800k",
            vec![(0, 100, 0.5), (100, 300, 0.5), (300, 1000, 0.0)],
        ),
    ] {
        let got = shares(&parse(spec), n, 9);
        for (lo, hi, want) in bounds {
            let share: f64 = got[lo..hi].iter().sum();
            assert!(
                (share - want).abs() < 0.01,
                "{spec}: [{lo}, {hi}) took {share}, not {want}"
            );
            if want > 0.0 {
                let mid = (lo + hi) / 2;
                let first: f64 = got[lo..mid].iter().sum();
                assert!(
                    (first / share - 0.5).abs() < 0.02,
                    "{spec}: [{lo}, {hi}) not uniform"
                );
            }
        }
    }
}

#[test]
fn the_spelling_round_trips_and_bad_values_name_the_range() {
    for s in [
        "random",
        "zipf:1.2",
        "zipf:0.9:0.5",
        "pareto:0.2",
        "normal:10",
        "normal:5:0.25",
        "zoned:60/10:30/20:10/70",
        "zoned_abs:60/20MiB:40/1GiB",
    ] {
        let d = parse(s);
        assert_eq!(parse(&d.to_string()), d, "{s} -> {d}");
    }
    assert_eq!(parse("random"), Distribution::Uniform);
    assert_eq!(parse("gauss:10"), parse("normal:10"));
    for (s, names) in [
        ("zipf:0", "zipf's theta is > 0"),
        ("zipf", "zipf's theta is > 0"),
        ("pareto:1", "pareto's h is in (0, 1)"),
        ("pareto:-0.2", "pareto's h is in (0, 1)"),
        ("normal:0", "in (0, 100]"),
        ("normal:150", "in (0, 100]"),
        ("zipf:1.2:1.5", "the center is in 0..=1"),
        ("zoned:60/10:30/20", "access shares sum to 100"),
        ("zoned:60/10:40/20", "sizes sum to 100"),
        ("zoned:r:60/10:40/90", "no r:/w:/t: lists"),
        ("zoned_abs:100/0", "a size > 0"),
        ("lognormal:3", "random, zipf:THETA"),
    ] {
        let e = Distribution::parse("random_distribution", s)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("random_distribution") && e.contains(s),
            "{s}: {e}"
        );
        assert!(e.contains(names), "{s}: {e}");
    }
}
