//! The fuzz targets (fuzz/, its own cargo workspace) build on the stable
//! toolchain, and every input of their committed corpora (fuzz/corpus/TARGET)
//! runs through its target without a crash. The targets are built without
//! coverage instrumentation (that needs nightly and `cargo fuzz`); libFuzzer
//! then runs each file given on its command line once, and a panic in the
//! code under test aborts it with a non-zero status. See docs/fuzzing.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use storlab::target::Target;

/// Every target in fuzz/Cargo.toml.
const TARGETS: [&str; 5] = [
    "jobfile",
    "cli_args",
    "agent_request",
    "imports",
    "nfs_reply",
];

/// Inputs per libFuzzer invocation (keeps the command line short).
const CHUNK: usize = 400;

fn corpus(root: &Path, target: &str) -> Vec<PathBuf> {
    let dir = root.join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn fuzz_targets_build_on_stable_and_replay_their_corpora() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A target directory of its own: the outer `cargo test` holds target/'s lock.
    let target_dir = root.join("target/fuzz-replay");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let t0 = Instant::now();
    let out = Command::new(&cargo)
        .args(["build", "--locked", "--bins", "--manifest-path"])
        .arg(root.join("fuzz/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "building the fuzz targets failed{}:\n{err}",
        if err.contains("lock file") && err.contains("needs to be updated") {
            " (fuzz/Cargo.lock is stale after a dependency change: run \
             `cargo update --manifest-path fuzz/Cargo.toml --workspace` and commit it)"
        } else {
            ""
        }
    );
    eprintln!("fuzz targets built in {:.1} s", t0.elapsed().as_secs_f64());
    for target in TARGETS {
        let bin = target_dir.join("debug").join(target);
        let files = corpus(root, target);
        assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
        let t0 = Instant::now();
        for chunk in files.chunks(CHUNK) {
            let out = Command::new(&bin)
                .arg("-runs=1")
                .args(chunk)
                .output()
                .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()));
            let log = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "fuzz target {target} crashed on its corpus (status {}):\n{}",
                out.status,
                log.lines()
                    .filter(|l| !l.starts_with("Running:") && !l.starts_with("Executed"))
                    .take(60)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            // libFuzzer names every input it ran; all of them ran.
            let ran = log.lines().filter(|l| l.starts_with("Executed ")).count();
            assert_eq!(ran, chunk.len(), "{target}: not every input ran:\n{log}");
        }
        eprintln!(
            "{target}: {} corpus inputs replayed in {:.1} s",
            files.len(),
            t0.elapsed().as_secs_f64()
        );
    }
}

/// Inputs that broke a fuzz target's property, checked directly (no build).
#[test]
fn regressions_found_with_the_fuzz_targets() {
    // cli_args: a target must print as a URL that parses to the same target
    // (the controller sends targets to agents printed). A multi-component NFS
    // export given with ?export= printed without it, and the agent would have
    // mounted /e and opened sub/f.
    for input in [
        "nfs://h/e/sub/f?export=e/sub",
        "nfs://h/a/b/f?export=/a/b&mountport=20048",
        "nfs://h//f?export=/",
        "nfs://[::1]:2050/x/y/z/f?version=4&export=/x/y",
    ] {
        let t = Target::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        let shown = t.to_string();
        let again = Target::parse(&shown).unwrap_or_else(|e| panic!("{input} -> {shown}: {e}"));
        assert_eq!(again, t, "{input} prints as {shown}");
    }
}

/// The crashing inputs the fuzzers found (fuzz/regressions/TARGET/), each
/// through what its target calls, now answered with an error naming the thing.
#[test]
fn crashes_found_by_the_fuzzers_are_errors_now() {
    // agent_request: a load point duration of 3.6e43 s panicked in
    // Duration::from_secs_f64 while decoding, killing an agent handler thread.
    let input = include_bytes!("../fuzz/regressions/agent_request/duration-overflow");
    let (&which, body) = input.split_first().unwrap();
    assert_eq!(which, 1, "the input is a prepare request");
    let e = storlab::fleet::agent::decode_request(storlab::fleet::wire::paths::PREPARE, body)
        .unwrap_err();
    assert_eq!(e.status, 400, "{}", e.message);
    let body = br#"{"run":1,"spec":{"runtime":3.6e43},"vms":[],"targets":[],"threads":null,"allow_overwrite":false}"#;
    let e = storlab::fleet::agent::decode_request(storlab::fleet::wire::paths::PREPARE, body)
        .unwrap_err();
    assert_eq!(e.status, 400, "{}", e.message);
    assert!(
        e.message.contains("field spec.runtime") && e.message.contains("too large"),
        "{}",
        e.message
    );
    // cli_args: `iscsi://13[:]::260/...` parsed with host `13[:]:`, which
    // printed as a URL that does not parse.
    let input = include_bytes!("../fuzz/regressions/cli_args/bracket-in-host");
    let first = std::str::from_utf8(input).unwrap().lines().next().unwrap();
    let e = Target::parse(first).unwrap_err().to_string();
    assert!(e.contains("invalid host") && e.contains("13[:]"), "{e}");
    assert!(Target::parse("iscsi://[::1]:3261/iqn.2026-11.lab.storlab:store/1").is_ok());
}
