use super::*;

/// A preset file with `body` as the preset `mine`, written under a fresh
/// temporary directory; returns its path.
fn user_file(tag: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("storlab-presets-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("media.toml");
    std::fs::write(&f, format!("[mine]\n{body}")).unwrap();
    f
}

/// A valid flash preset's keys, with `key`'s line replaced by `line`
/// (or dropped when `line` is empty).
fn flash_with(key: &str, line: &str) -> String {
    let lines = [
        "description = \"a test drive\"",
        "kind = \"flash\"",
        "devices = 4",
        "stripe_kb = 16",
        "read_us = 100",
        "write_us = 200",
        "transfer_mb_s = 200",
        "cache_us = 20",
        "read_cache_mb = 0",
        "write_cache_mb = 16",
        "destage_mb_s = 100",
        "nvram = false",
    ];
    lines
        .iter()
        .map(|l| {
            if l.starts_with(&format!("{key} =")) {
                line
            } else {
                l
            }
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn built_in_presets_load_and_every_figure_has_a_source() {
    let names = preset_names(None);
    for want in [
        "array-15k",
        "raidz-sata",
        "raidz-sata-slog",
        "freenas-mirror",
        "x4500-raidz",
        "ramsan-400",
        "sata-ssd",
        "nvme-ssd",
        "ram",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(names.iter().any(|n| n == DEFAULT_MEDIA));
    let doc: toml::Table = BUILTIN.parse().unwrap();
    for (name, t) in &doc {
        let t = t.as_table().unwrap();
        let sources = t.get("source").and_then(|s| s.as_table());
        for key in t.keys() {
            if ["description", "kind", "source"].contains(&key.as_str()) {
                continue;
            }
            let src = sources.and_then(|s| s.get(key)).and_then(|s| s.as_str());
            assert!(
                src.is_some_and(|s| s.len() > 10),
                "preset {name}: {key} has no source"
            );
            // A figure set from a study's result says so up front.
            let src = src.unwrap_or_default();
            assert!(
                !src.contains("fitted") || src.starts_with("fitted: "),
                "preset {name}: {key}: a fitted figure's source starts with \"fitted: \": {src}"
            );
        }
    }
    assert!(resolve("ram", None).unwrap().page_cache());
    assert!(!resolve(DEFAULT_MEDIA, None).unwrap().page_cache());
    assert_eq!(resolve("fixed:10", None).unwrap().name(), "fixed:10,10,10");
}

#[test]
fn an_unknown_preset_is_named_with_the_allowed_names() {
    let e = resolve("array-10k", None).err().unwrap();
    assert!(!e.contains('\n'), "{e}");
    assert!(e.contains("\"array-10k\""), "{e}");
    for n in preset_names(None) {
        assert!(e.contains(&n), "{e} lacks {n}");
    }
    assert!(e.contains(FIXED_ALLOWED), "{e}");
}

#[test]
fn a_user_preset_file_adds_presets() {
    let f = user_file("ok", &flash_with("", ""));
    assert!(preset_names(Some(&f)).contains(&"mine".to_string()));
    let m = resolve("mine", Some(&f)).unwrap();
    assert_eq!(m.name(), "mine");
    assert_eq!(
        describe("mine", Some(&f)).unwrap(),
        "mine: a test drive".to_string()
    );
    assert!(resolve("mine", None).is_err());
    let clash = user_file("clash", "").with_file_name("clash.toml");
    std::fs::write(&clash, "[ram]\ndescription = \"x\"\nkind = \"ram\"\n").unwrap();
    let e = resolve("ram", Some(&clash)).err().unwrap();
    assert!(e.contains("preset ram: already a built-in"), "{e}");
    std::fs::remove_dir_all(f.parent().unwrap()).unwrap();
    std::fs::remove_dir_all(clash.parent().unwrap()).ok();
}

#[test]
fn bad_values_name_the_file_preset_key_and_range() {
    let cases = [
        (
            "missing",
            "read_us",
            "",
            "read_us missing (allowed 0 to 1000000 µs)",
        ),
        (
            "negative",
            "destage_mb_s",
            "destage_mb_s = -5",
            "destage_mb_s = -5: out of range (allowed 0.001 to 1000000 MB/s)",
        ),
        (
            "range",
            "devices",
            "devices = 5000",
            "devices = 5000: out of range (allowed 1 to 1024 devices)",
        ),
        (
            "type",
            "cache_us",
            "cache_us = \"fast\"",
            "cache_us = \"fast\": not a number (allowed 0 to 1000000 µs)",
        ),
        (
            "kind",
            "kind",
            "kind = \"tape\"",
            "kind = \"tape\": allowed spindle, flash, ram",
        ),
        ("nvram", "nvram", "", "nvram missing (allowed true, false)"),
        (
            "unknown",
            "nvram",
            "nvram = true\nseek_ms = 3",
            "seek_ms: unknown key for kind flash",
        ),
        (
            "pool_log_type",
            "nvram",
            "nvram = false\npool_log = \"yes\"",
            "pool_log = \"yes\": allowed true, false",
        ),
        (
            "pool_log_with_log",
            "nvram",
            "nvram = false\npool_log = true\nlog_us = 50\nlog_mb_s = 250",
            "pool_log = true: this preset has a log device",
        ),
        (
            "txg_without_pool_log",
            "nvram",
            "nvram = false\ntxg_s = 5",
            "txg_s: only with pool_log = true",
        ),
        (
            "record_without_cache",
            "write_cache_mb",
            "write_cache_mb = 0\nrecord_kb = 128",
            "record_kb: only with a write-back cache",
        ),
        (
            "record_range",
            "nvram",
            "nvram = false\nrecord_kb = 0",
            "record_kb = 0: out of range (allowed 0.5 to 1048576 KiB)",
        ),
        (
            "txg_range",
            "nvram",
            "nvram = false\npool_log = true\ntxg_s = 0",
            "txg_s = 0: out of range (allowed 0.1 to 3600 s)",
        ),
        (
            "readahead_some",
            "nvram",
            "nvram = false\nreadahead_kb = 1024\nreadahead_streams = 4",
            "readahead_chunk_kb missing: the read-ahead takes all of readahead_streams, \
             readahead_kb, readahead_chunk_kb, readahead_reap_ms (given: readahead_streams, \
             readahead_kb)",
        ),
        (
            "readahead_chunk",
            "nvram",
            "nvram = false\nreadahead_streams = 4\nreadahead_kb = 1024\n\
             readahead_chunk_kb = 2048\nreadahead_reap_ms = 0",
            "readahead_chunk_kb = 2048: more than readahead_kb = 1024",
        ),
        (
            "readahead_streams",
            "nvram",
            "nvram = false\nreadahead_streams = 0\nreadahead_kb = 1024\n\
             readahead_chunk_kb = 128\nreadahead_reap_ms = 0",
            "readahead_streams = 0: out of range (allowed 1 to 1024 readahead_streams)",
        ),
    ];
    for (tag, key, line, want) in cases {
        let f = user_file(tag, &flash_with(key, line));
        let e = resolve("mine", Some(&f)).err().unwrap();
        let prefix = format!("media file {}: preset mine: ", f.display());
        assert!(!e.contains('\n'), "{tag}: {e}");
        assert!(e.starts_with(&prefix), "{tag}: {e}");
        assert!(e.contains(want), "{tag}: {e}\nwant {want}");
        std::fs::remove_dir_all(f.parent().unwrap()).unwrap();
    }
    let f = user_file("syntax", "devices = = 3\n");
    let e = resolve("mine", Some(&f)).err().unwrap();
    assert!(
        e.starts_with(&format!("media file {}:", f.display())) && e.contains("line 2"),
        "{e}"
    );
    std::fs::remove_dir_all(f.parent().unwrap()).unwrap();
}

#[test]
fn predictions_come_from_the_model_and_not_for_ram() {
    let w = Workload {
        bs: 4096,
        read: 1.0,
        random: 1.0,
        qd: 1,
        span: 1 << 30,
        sync: false,
        streams: 1,
    };
    let hdd = predict("array-15k", None, &w).unwrap();
    let ssd = predict("nvme-ssd", None, &w).unwrap();
    // One 15k spindle: 3.4 ms seek + 2 ms rotation, a few % cache hits.
    assert!((4.5e6..5.6e6).contains(&hdd.latency_ns), "{hdd:?}");
    assert!(ssd.latency_ns < 100e3, "{ssd:?}");
    assert!(predict("ram", None, &w).is_err());
}

/// The model's figures of the built-in preset `name`.
fn model(name: &str) -> Params {
    match find(name, None).unwrap().kind {
        Kind::Model(p) => p,
        Kind::Ram => panic!("{name} has no model"),
    }
}

#[test]
fn zfs_presets_drain_random_writes_at_the_sequential_rate_times_size_over_record() {
    for name in [
        "raidz-sata",
        "raidz-sata-slog",
        "freenas-mirror",
        "x4500-raidz",
    ] {
        let p = model(name);
        assert_eq!(
            p.record,
            Some(128 << 10),
            "{name}: ZFS's default recordsize"
        );
        // Each mirror or raidz group writes sequential data at its data
        // disks' rate: the destage is the devices' rate times the devices
        // (groups) for raidz, one disk's for a mirror of two.
        let groups = if name == "x4500-raidz" { p.count } else { 1 };
        let pool = p.transfer * groups as f64;
        assert!((p.destage / pool - 1.0).abs() < 0.01, "{name}: {p:?}");
        // And so random 8 KiB writes drain at 8/128 of it: the rule, not a
        // figure fitted to a study.
        let random = p.destage * 8192.0 / p.destage_bytes_mean(8192, 1.0);
        assert!((random / (p.destage / 16.0) - 1.0).abs() < 1e-9, "{name}");
    }
    // WAFL writes anywhere in full stripes: random as fast as sequential.
    let wafl = model("array-15k");
    assert_eq!(wafl.destage_bytes_mean(8192, 1.0), 8192.0);
}

#[test]
fn the_studies_arrays_predict_what_their_hardware_implies() {
    let w = |bs, read, qd| Workload {
        bs,
        read,
        random: 1.0,
        qd,
        span: 1 << 30,
        sync: false,
        streams: 1,
    };
    // RamSan-400: a 4 KiB read is a controller's 10 µs plus 4 KiB over its
    // two 4 Gb ports, the 15 µs TMS quotes; at depth its four controllers
    // serve 4 / (10 µs + 8 KiB at 800 MB/s) 8 KiB reads a second.
    let ram = model("ramsan-400");
    let one = predict("ramsan-400", None, &w(4096, 1.0, 1)).unwrap();
    let access = 10e3 + 4096.0 / ram.transfer;
    assert!((one.latency_ns / access - 1.0).abs() < 0.01, "{one:?}");
    let deep = predict("ramsan-400", None, &w(8192, 1.0, 256)).unwrap();
    let ceiling = 4.0 / (10e3 + 8192.0 / ram.transfer) * 1e9;
    assert!(
        (0.9..=1.0).contains(&(deep.iops / ceiling)),
        "{deep:?} vs {ceiling}"
    );
    // The X4500: sequential 1 MiB reads from six raidz groups of five data
    // disks at depth reach the groups' combined rate: the read-ahead reads
    // every record ahead, none waits for its own.
    let x = model("x4500-raidz");
    let seq = Workload {
        random: 0.0,
        ..w(1 << 20, 1.0, 64)
    };
    let st = predict("x4500-raidz", None, &seq).unwrap();
    let rate = st.iops * (1 << 20) as f64 / 1e9;
    let groups = x.transfer * x.count as f64;
    assert!(
        (rate / groups - 1.0).abs() < 0.1,
        "{rate} bytes/ns from {groups} of groups"
    );
    // FreeNAS's mirror: a random 8 KiB read is one disk's seek and rotation.
    let f = predict("freenas-mirror", None, &w(8192, 1.0, 1)).unwrap();
    let disk = model("freenas-mirror").device_moments(false, 8192, 1.0).0;
    assert!(
        f.latency_ns < disk && f.latency_ns > 0.8 * disk,
        "{f:?} vs {disk}"
    );
}
