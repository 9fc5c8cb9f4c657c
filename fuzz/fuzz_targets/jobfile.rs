//! The job-file parser: any text gives a job or a named error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(job) = storlab::workload::jobfile::parse(text, "fuzz.toml") {
        // A parsed job has been validated; every point's totals must be computable.
        for p in &job.points {
            let _ = p.total_vms();
        }
    }
});
