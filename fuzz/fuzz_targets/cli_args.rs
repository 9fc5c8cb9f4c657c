//! What the CLI parses from user text: target URLs, `--hosts`, `--link`, sizes,
//! durations, percentages, and every fio-named flag (`--bs`, `--rate`, ...) as
//! `KEY=VALUE` lines applied like `storlab run` does. Line 1 is a target URL;
//! every further line is `KEY=VALUE` (a flag) or a bare value tried as a size,
//! a duration, a percentage, a link rate and a hosts list.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab::target::Target;
use storlab::workload::{jobfile, units, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or("");
    if let Ok(t) = Target::parse(first) {
        // What a target prints must parse to the same target: the controller
        // sends targets to agents in this form.
        let shown = t.to_string();
        let _ = t.backend_name();
        match Target::parse(&shown) {
            Ok(again) => assert_eq!(again, t, "target {first:?} prints as {shown:?}"),
            Err(e) => panic!("target {first:?} prints as {shown:?}, which does not parse: {e}"),
        }
    }
    let mut settings = jobfile::Settings::default();
    for line in lines {
        match line.split_once('=') {
            Some((key, value)) => {
                let _ = settings.set(key, &toml::Value::String(value.to_string()));
            }
            None => {
                let _ = units::parse_size(line);
                let _ = units::parse_duration(line);
                let _ = units::parse_pct(line);
                let _ = storlab::lab::link::Link::parse(line);
                // Only lists: a string naming an existing file would be read.
                if !std::path::Path::new(line).exists() {
                    let _ = storlab::fleet::controller::parse_hosts(line);
                }
            }
        }
    }
    let job = jobfile::job_from_settings("cli", &settings);
    let _ = validate::validate_job(&job);
});
