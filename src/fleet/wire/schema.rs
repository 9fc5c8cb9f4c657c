//! The wire's JSON schema, pinned to [`PROTOCOL_VERSION`]: a change to any
//! message's JSON (a key added, removed or renamed, a value of another JSON
//! type, a field that may now be left out or no longer may, an enum spelt
//! otherwise) changes the digest and fails [`the_schema_is_pinned_to_the_protocol_version`]
//! until the version is bumped.
//!
//! The schema is read from a sample of every message with every field set
//! (every option present, the load point's too: [`super::spec::samples`]):
//! one line per JSON path with its type and whether it may be left out (the
//! sample with that key removed still reads), and one line per value of
//! every enum.

use super::spec::samples::{every_variant, full_spec};
use super::*;
use crate::stats::Recorder;
use crate::workload::Dir;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;

/// The schema digest of each protocol version since the wire had its own
/// types. A new version adds its line; a line is never changed.
const PINNED: &[(u32, u64)] = &[
    (6, 0x616c_3cfe_1cf3_ce12),
    (7, 0x4bed_f2d7_ae45_b27a),
    (8, 0x90aa_b673_12a6_eaf1),
];

/// One message's sample, and whether a JSON value reads as that message.
struct Sample {
    name: &'static str,
    json: Value,
    reads: fn(Value) -> bool,
}

fn sample<T: Serialize + DeserializeOwned>(name: &'static str, v: T) -> Sample {
    Sample {
        name,
        json: serde_json::to_value(&v).expect("a message serializes"),
        reads: |v| serde_json::from_value::<T>(v).is_ok(),
    }
}

/// A snapshot with reads, writes, errors, verify errors, an issue lag and an outage.
fn snap() -> Snapshot {
    let mut r = Recorder::new();
    for i in 0..20 {
        r.record(Dir::Read, 4096, 1000 + i * 37);
        r.record(Dir::Write, 8192, 90_000 + i);
    }
    r.record_error(Dir::Read);
    r.record_error(Dir::Write);
    r.record_issue_lag(1200);
    let mut s = r.take();
    s.verify_errors = 3;
    s.outages = crate::stats::snapshot::Outages {
        count: 1,
        ns: 1_500_000_000,
        retried: 4,
    };
    s
}

/// Every message, every field set.
fn samples() -> Vec<Sample> {
    let cpu = WireCpu {
        proc_user_s: 0.25,
        proc_sys_s: 0.5,
        host_busy_pct: 12.5,
        cores: 2,
        ctx: 7,
    };
    let worker = WireWorker {
        worker: 3,
        stats: snap(),
    };
    let map = WireSavedMap {
        target: "file:/srv/a".into(),
        path: "/srv/a.map".into(),
    };
    vec![
        sample(
            "hello",
            HelloRequest {
                protocol: PROTOCOL_VERSION,
                storlab_version: "0.1.0".into(),
                controller_unix_ns: 1,
                targets: vec!["null:".into()],
            },
        ),
        sample(
            "hello reply",
            HelloReply {
                protocol: PROTOCOL_VERSION,
                storlab_version: "0.1.0".into(),
                host: "h1".into(),
                capabilities: vec!["backend:null".into()],
                agent_unix_ns: 1,
                state: RunState::Idle,
                refused_targets: vec!["file:/etc: not allowed".into()],
            },
        ),
        sample(
            "prepare",
            PrepareRequest {
                run: 1,
                spec: WireSpec::from(&full_spec()),
                vms: vec![0, 1],
                targets: vec!["null:".into()],
                threads: Some(2),
                allow_overwrite: true,
                verify_run: 9,
            },
        ),
        sample(
            "prepare reply",
            PrepareReply {
                run: 1,
                backend: "null".into(),
                threads: 2,
                prepared: vec![WirePreparedFile {
                    path: "/srv/a".into(),
                    created: true,
                    filled_bytes: 1,
                }],
                notes: vec!["note".into()],
            },
        ),
        sample(
            "start",
            StartRequest {
                run: 1,
                at_unix_ns: 1,
            },
        ),
        sample(
            "start reply",
            StartReply {
                run: 1,
                starts_in_ms: -1,
            },
        ),
        sample(
            "intervals",
            IntervalsRequest {
                run: 1,
                from: 0,
                wait_ms: 1,
            },
        ),
        sample(
            "intervals reply",
            IntervalsReply {
                run: 1,
                intervals: vec![WireInterval {
                    index: 0,
                    end_ns: 1,
                    stats: snap(),
                    workers: vec![worker.clone()],
                    cpu,
                }],
                done: true,
                error: Some("error".into()),
                workers: vec![worker],
                verify_maps: vec![map.clone()],
                verify_map_error: Some("error".into()),
                verify_bad: vec!["bad".into()],
                verify_journals: vec![map],
                verify_journal_error: Some("error".into()),
            },
        ),
        sample(
            "stop",
            StopRequest {
                run: 1,
                reason: "why".into(),
            },
        ),
        sample(
            "stop reply",
            StopReply {
                run: 1,
                stopping: true,
            },
        ),
        sample("result", ResultRequest { run: 1 }),
        sample(
            "result reply",
            ResultReply {
                run: 1,
                intervals: 1,
                done: true,
                error: Some("error".into()),
            },
        ),
        sample(
            "error reply",
            ErrorReply {
                protocol: PROTOCOL_VERSION,
                storlab_version: "0.1.0".into(),
                host: "h1".into(),
                kind: ErrorKind::Version,
                error: "error".into(),
            },
        ),
    ]
}

/// The enums outside the spec, every value (the `match` names every variant
/// of `ErrorKind`, so a new one fails to compile until it is listed).
fn message_enums() -> Vec<String> {
    let kinds = [
        ErrorKind::Version,
        ErrorKind::Auth,
        ErrorKind::NotAllowed,
        ErrorKind::BadRequest,
        ErrorKind::Busy,
        ErrorKind::Prepare,
        ErrorKind::Failed,
    ];
    let mut out: Vec<String> = kinds
        .iter()
        .map(|k| match k {
            ErrorKind::Version
            | ErrorKind::Auth
            | ErrorKind::NotAllowed
            | ErrorKind::BadRequest
            | ErrorKind::Busy
            | ErrorKind::Prepare
            | ErrorKind::Failed => format!("kind = {}", serde_json::to_string(k).unwrap()),
        })
        .collect();
    out.extend(
        RunState::ALL
            .iter()
            .map(|s| format!("state = {}", serde_json::to_string(s).unwrap())),
    );
    out
}

/// The JSON type of `v` (integers and fractional numbers apart).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The lines of `s`'s value at `pointer` (a JSON pointer into `s.json`),
/// named `path`, and of everything under it.
fn walk(s: &Sample, pointer: &str, path: &str, out: &mut BTreeSet<String>) {
    match s.json.pointer(pointer).expect("a pointer the walk made") {
        Value::Object(m) => {
            for (k, child) in m {
                let at = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                let mut without = s.json.clone();
                if let Some(o) = without.pointer_mut(pointer).and_then(Value::as_object_mut) {
                    o.remove(k);
                }
                let optional = if (s.reads)(without) {
                    "may be left out"
                } else {
                    "required"
                };
                let field = format!("{path}.{k}");
                out.insert(format!("{field}: {}, {optional}", kind(child)));
                walk(s, &at, &field, out);
            }
        }
        Value::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                let field = format!("{path}[]");
                out.insert(format!("{field}: {}", kind(item)));
                walk(s, &format!("{pointer}/{i}"), &field, out);
            }
        }
        _ => {}
    }
}

/// Every line of the schema `samples` show, sorted, with every enum value.
fn schema_of(samples: &[Sample]) -> Vec<String> {
    let mut lines = BTreeSet::new();
    for s in samples {
        walk(s, "", s.name, &mut lines);
    }
    lines.extend(every_variant().into_iter().map(|l| format!("spec {l}")));
    lines.extend(message_enums());
    lines.into_iter().collect()
}

/// The digest of a schema's lines.
fn digest(lines: &[String]) -> u64 {
    fnv1a(lines.join("\n").as_bytes())
}

/// FNV-1a, 64 bits: a digest that is the same on every build and release.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn the_schema_is_pinned_to_the_protocol_version() {
    let samples = samples();
    for s in &samples {
        assert!(
            (s.reads)(s.json.clone()),
            "the {} sample reads back",
            s.name
        );
    }
    let lines = schema_of(&samples);
    let digest = digest(&lines);
    let (last, _) = *PINNED.last().expect("a pinned version");
    assert_eq!(
        last, PROTOCOL_VERSION,
        "PROTOCOL_VERSION is {PROTOCOL_VERSION} but the last pinned schema is protocol {last}'s: \
         add ({PROTOCOL_VERSION}, {digest:#018x}) to PINNED in src/fleet/wire/schema.rs"
    );
    let pinned = PINNED
        .iter()
        .find(|(v, _)| *v == PROTOCOL_VERSION)
        .map(|(_, d)| *d);
    assert_eq!(
        pinned,
        Some(digest),
        "the wire's JSON changed (schema digest {digest:#018x}, protocol {PROTOCOL_VERSION} \
         pinned {:#018x}): bump PROTOCOL_VERSION in src/fleet/wire/mod.rs, say there what \
         changed, and add ({}, {digest:#018x}) to PINNED in src/fleet/wire/schema.rs. \
         The schema now:\n  {}",
        pinned.unwrap_or_default(),
        PROTOCOL_VERSION + 1,
        lines.join("\n  ")
    );
}

#[test]
fn the_schema_holds_types_optionality_and_enum_spellings() {
    let lines = schema_of(&samples());
    for want in [
        "prepare.spec.groups[].access.iodepth: integer, required",
        "prepare.spec.groups[].access.bs[][]: integer",
        "prepare.spec.io_timeout: number, may be left out",
        "prepare.spec.runtime: number, required",
        "prepare.spec.steady.criterion.slope: number, required",
        "prepare.threads: integer, may be left out",
        "spec sync = \"dsync\"",
        "kind = \"not_allowed\"",
        "intervals reply.intervals[].stats.read.lat.buckets[][]: integer",
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "{want:?} not in the schema:\n{lines:#?}"
        );
    }
}

/// An edit of a load point's JSON object.
type SpecEdit = fn(&mut serde_json::Map<String, Value>);

/// A field added to the spec's JSON, one renamed, or a number sent as
/// another type each changes the digest.
#[test]
fn a_changed_spec_changes_the_digest() {
    let base = digest(&schema_of(&samples()));
    let edits: [(&str, SpecEdit); 3] = [
        ("a field added", |spec| {
            spec.insert("new_field".into(), Value::from(1));
        }),
        ("a field renamed", |spec| {
            let seed = spec.remove("seed").unwrap();
            spec.insert("seeds".into(), seed);
        }),
        ("seconds as integers", |spec| {
            spec.insert("runtime".into(), Value::from(20));
        }),
    ];
    for (what, edit) in edits {
        let mut changed = samples();
        let prepare = changed.iter_mut().find(|s| s.name == "prepare").unwrap();
        edit(prepare.json["spec"].as_object_mut().unwrap());
        assert_ne!(digest(&schema_of(&changed)), base, "{what}");
    }
}
