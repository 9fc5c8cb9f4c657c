//! The fio and Iometer importers: any text gives a job or named errors, never
//! a panic; a job that imports prints (`convert`) as a storlab job file that
//! reads back to the same job.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab::workload::{fio, icf, jobfile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for imported in [fio::parse(text, "fuzz.fio"), icf::parse(text, "fuzz.icf")]
        .into_iter()
        .flatten()
    {
        let toml = imported.to_toml();
        let back = jobfile::parse(&toml, "converted.toml").expect("a converted job reads back");
        assert_eq!(back, imported.job, "{toml}");
    }
});
