//! Statistics: latency histograms, interval snapshots, CPU sampling, derived metrics.
