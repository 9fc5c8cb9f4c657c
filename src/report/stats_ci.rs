//! Repeated measurements: mean, standard deviation, the 95% confidence
//! interval of the mean (Student's t) and a "within noise" test (Welch's
//! t-test at 95%). Every function takes the repeated values of one figure
//! (say the IOPS of the same job and load point measured N times).

/// Two-sided 95% critical values of Student's t for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Beyond 30 degrees of freedom: (df, t), interpolated in 1/df; 1.960 at infinity.
const T95_TAIL: [(f64, f64); 4] = [(30.0, 2.042), (40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];

/// Two-sided 95% critical value of Student's t for `df` degrees of freedom
/// (fractional `df`, as Welch's test gives, is interpolated; `df < 1` uses 1).
pub fn t95(df: f64) -> f64 {
    if !df.is_finite() {
        return 1.960;
    }
    let df = df.max(1.0);
    if df <= 30.0 {
        let lo = df.floor() as usize;
        let hi = df.ceil() as usize;
        let f = df - lo as f64;
        return T95[lo - 1] * (1.0 - f) + T95[hi - 1] * f;
    }
    for w in T95_TAIL.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if df <= d1 {
            let f = (1.0 / d0 - 1.0 / df) / (1.0 / d0 - 1.0 / d1);
            return t0 + (t1 - t0) * f;
        }
    }
    let (d0, t0) = T95_TAIL[T95_TAIL.len() - 1];
    t0 + (1.960 - t0) * (1.0 - d0 / df)
}

/// Arithmetic mean; 0 for no values.
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Sample variance (n − 1 in the denominator); 0 for fewer than two values.
pub fn variance(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64
}

/// Sample standard deviation; 0 for fewer than two values.
pub fn stddev(v: &[f64]) -> f64 {
    variance(v).sqrt()
}

/// Summary of repeated values of one figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Number of values.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub stddev: f64,
    /// Half-width of the 95% confidence interval of the mean
    /// (`t95(n − 1) · s / √n`); `None` for fewer than two values.
    pub ci95: Option<f64>,
}

impl Estimate {
    /// Estimate from repeated values.
    pub fn of(v: &[f64]) -> Estimate {
        let n = v.len();
        let s = stddev(v);
        Estimate {
            n,
            mean: mean(v),
            stddev: s,
            ci95: (n >= 2).then(|| t95((n - 1) as f64) * s / (n as f64).sqrt()),
        }
    }
}

/// Whether the difference between the means of `a` and `b` is within noise:
/// Welch's two-sample t-test does not reject "equal means" at 95%.
///
/// With fewer than two values on either side there is no estimate of the
/// noise, so only identical means count as within noise. Two sets without
/// any spread are within noise only when their means are equal.
pub fn within_noise(a: &[f64], b: &[f64]) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let (ma, mb) = (mean(a), mean(b));
    if a.len() < 2 || b.len() < 2 {
        return ma == mb;
    }
    let (va, vb) = (variance(a) / a.len() as f64, variance(b) / b.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return ma == mb;
    }
    let t = (ma - mb).abs() / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    t < t95(df)
}

/// Welch's comparison of two samples: the difference of their means and its
/// 95% confidence interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Welch {
    /// `mean(b) − mean(a)`.
    pub diff: f64,
    /// Half-width of the 95% confidence interval of `diff` (Welch–Satterthwaite
    /// degrees of freedom); 0 when neither sample varies.
    pub ci95: f64,
    /// Whether the interval excludes 0: the means differ beyond noise at 95%.
    pub significant: bool,
}

/// Compare the means of `a` and `b` (Welch's two-sample t-test at 95%);
/// `None` when either side has fewer than two values (no estimate of the
/// noise). Agrees with [`within_noise`]: `significant == !within_noise(a, b)`.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let diff = mean(b) - mean(a);
    let (va, vb) = (variance(a) / a.len() as f64, variance(b) / b.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(Welch {
            diff,
            ci95: 0.0,
            significant: diff != 0.0,
        });
    }
    let df = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let ci95 = t95(df) * se2.sqrt();
    Some(Welch {
        diff,
        ci95,
        significant: diff.abs() >= ci95,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_table_interpolates() {
        assert_eq!(t95(1.0), 12.706);
        assert_eq!(t95(10.0), 2.228);
        assert!((t95(10.5) - (2.228 + 2.201) / 2.0).abs() < 1e-12);
        assert!((t95(40.0) - 2.021).abs() < 1e-12);
        assert!(t95(1000.0) < 1.98 && t95(1000.0) > 1.96);
        assert_eq!(t95(f64::INFINITY), 1.960);
        assert_eq!(t95(0.2), 12.706);
    }

    #[test]
    fn estimate_of_known_values() {
        let e = Estimate::of(&[10.0, 12.0, 14.0]);
        assert_eq!(e.n, 3);
        assert_eq!(e.mean, 12.0);
        assert_eq!(e.stddev, 2.0);
        // t(2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((e.ci95.unwrap() - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(Estimate::of(&[5.0]).ci95, None);
        assert_eq!(Estimate::of(&[]).mean, 0.0);
    }

    #[test]
    fn welch_separates_clear_differences() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        assert!(within_noise(&a, &[100.2, 99.8, 100.9, 99.1]));
        assert!(!within_noise(&a, &[110.0, 111.0, 109.0, 110.5]));
        assert!(within_noise(&[5.0], &[5.0]));
        assert!(!within_noise(&[5.0], &[5.1]));
        assert!(!within_noise(&[], &[1.0, 2.0]));
        assert!(within_noise(&[3.0, 3.0], &[3.0, 3.0]));
        assert!(!within_noise(&[3.0, 3.0], &[4.0, 4.0]));
    }

    #[test]
    fn welch_interval_agrees_with_the_test() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let same = welch(&a, &[100.2, 99.8, 100.9, 99.1]).unwrap();
        assert!(!same.significant && same.diff.abs() < same.ci95, "{same:?}");
        let far = welch(&a, &[110.0, 111.0, 109.0, 110.5]).unwrap();
        assert!(
            far.significant && (far.diff - 10.125).abs() < 1e-9,
            "{far:?}"
        );
        assert!(far.ci95 > 0.0 && far.ci95 < 3.0, "{far:?}");
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        assert!(!welch(&[3.0, 3.0], &[3.0, 3.0]).unwrap().significant);
        assert!(welch(&[3.0, 3.0], &[4.0, 4.0]).unwrap().significant);
    }
}
