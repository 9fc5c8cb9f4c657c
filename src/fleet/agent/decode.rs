//! Decoding a request body: pure (no state, no storage), so it is what the
//! fuzz target `agent_request` exercises.

use super::MAX_BODY;
use crate::fleet::wire::{self, paths};
use crate::runner::HostPlan;
use crate::target::Target;
use crate::workload::Spec;
use serde::de::DeserializeOwned;

/// A request body refused before the agent acts on it: the HTTP status
/// (400 malformed, 404 unknown path, 413 too large) and why, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// HTTP status.
    pub status: u16,
    /// What is wrong, naming the path and the field.
    pub message: String,
}

/// A decoded request, with every check that needs neither state nor storage
/// done (the load point validated, VM numbers in range and ascending, target
/// URLs parsed).
#[derive(Debug)]
pub enum AgentRequest {
    /// `/v1/hello`.
    Hello(wire::HelloRequest),
    /// `/v1/prepare`, in the agent's own terms.
    Prepare(Box<PrepareOrder>),
    /// `/v1/start`.
    Start(wire::StartRequest),
    /// `/v1/intervals`.
    Intervals(wire::IntervalsRequest),
    /// `/v1/stop`.
    Stop(wire::StopRequest),
    /// `/v1/result`.
    Result(wire::ResultRequest),
}

/// A `/v1/prepare` as the agent acts on it: the wire's load point converted
/// to the in-memory spec and checked, the targets parsed.
#[derive(Debug)]
pub struct PrepareOrder {
    /// Run id chosen by the controller.
    pub run: u64,
    /// The verify run id every host of the controller's run writes (0: the agent's).
    pub verify_run: u32,
    /// The agent's share of the point, as this host runs it.
    pub plan: HostPlan,
}

/// Decode the body of a `POST` to `path`: pure (no state, no storage), so it
/// is what the fuzz target `agent_request` exercises.
pub fn decode_request(path: &str, body: &[u8]) -> Result<AgentRequest, DecodeError> {
    let bad = |message: String| DecodeError {
        status: 400,
        message,
    };
    if body.len() > MAX_BODY {
        return Err(DecodeError {
            status: 413,
            message: format!(
                "{path} body of {} bytes is over the agent's limit of {MAX_BODY} bytes",
                body.len()
            ),
        });
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| bad(format!("{path} body is not UTF-8 JSON: {e}")))?;
    Ok(match path {
        paths::HELLO => AgentRequest::Hello(parse(path, text)?),
        paths::PREPARE => {
            let req: wire::PrepareRequest = parse(path, text)?;
            AgentRequest::Prepare(Box::new(check_prepare(req).map_err(bad)?))
        }
        paths::START => AgentRequest::Start(parse(path, text)?),
        paths::INTERVALS => AgentRequest::Intervals(parse(path, text)?),
        paths::STOP => AgentRequest::Stop(parse(path, text)?),
        paths::RESULT => AgentRequest::Result(parse(path, text)?),
        other => {
            return Err(DecodeError {
                status: 404,
                message: format!(
                    "no such path {other:?} (allowed: {}, {}, {}, {}, {}, {}; GET {})",
                    paths::HELLO,
                    paths::PREPARE,
                    paths::START,
                    paths::INTERVALS,
                    paths::STOP,
                    paths::RESULT,
                    paths::METRICS
                ),
            });
        }
    })
}

/// JSON into `T`; the error names the field (`spec.groups[0].bs`).
fn parse<T: DeserializeOwned>(path: &str, text: &str) -> Result<T, DecodeError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let fail = |field: String, e: serde_json::Error| DecodeError {
        status: 400,
        message: if field.is_empty() || field == "." {
            format!("malformed {path} body: {e}")
        } else {
            format!("malformed {path} body: field {field}: {e}")
        },
    };
    let v: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| fail(e.path().to_string(), e.into_inner()))?;
    de.end().map_err(|e| fail(String::new(), e))?;
    Ok(v)
}

/// The checks of a prepare request that need no state: the load point is
/// valid, the VM numbers exist and ascend, threads > 0, the targets parse.
fn check_prepare(req: wire::PrepareRequest) -> Result<PrepareOrder, String> {
    let wire::PrepareRequest {
        run,
        spec,
        vms,
        targets,
        threads,
        allow_overwrite,
        verify_run,
    } = req;
    let spec = Spec::from(spec);
    // The same checks as a local run: the controller may be another build.
    crate::workload::validate::validate(&spec).map_err(|e| format!("invalid load point: {e}"))?;
    let total_vms = spec.total_vms();
    if let Some(v) = vms.iter().find(|&&v| v as u64 >= total_vms) {
        return Err(format!(
            "field vms: VM {v} asked for, the load point has {total_vms}"
        ));
    }
    if !vms.windows(2).all(|w| w[0] < w[1]) {
        return Err("field vms: VM numbers not strictly ascending".into());
    }
    if threads == Some(0) {
        return Err("field threads: 0 (allowed: 1 or more, or null for the agent's CPUs)".into());
    }
    let targets = targets
        .iter()
        .map(|t| Target::parse(t).map_err(|e| format!("field targets: {e}")))
        .collect::<Result<_, _>>()?;
    Ok(PrepareOrder {
        run,
        verify_run,
        plan: HostPlan {
            spec,
            vms,
            targets,
            threads: threads.map(|t| t as usize),
            allow_overwrite,
            lab_store: false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(path: &str, body: &str) -> DecodeError {
        decode_request(path, body.as_bytes()).unwrap_err()
    }

    #[test]
    fn unknown_paths_are_404_naming_the_allowed_ones() {
        let e = err("/v1/nope", "{}");
        assert_eq!(e.status, 404);
        assert!(e.message.contains("/v1/nope") && e.message.contains(paths::PREPARE));
    }

    #[test]
    fn malformed_bodies_name_the_path_and_field() {
        let e = err(paths::START, "{\"run\": \"seven\", \"at_unix_ns\": 1}");
        assert_eq!(e.status, 400);
        assert!(
            e.message.contains(paths::START) && e.message.contains("run"),
            "{}",
            e.message
        );
        let e = err(paths::STOP, "{\"run\": 1, \"reason\": \"x\"} trailing");
        assert_eq!(e.status, 400);
        let e = decode_request(paths::HELLO, &[0xff, 0xfe]).unwrap_err();
        assert!(e.message.contains("not UTF-8"), "{}", e.message);
    }

    #[test]
    fn oversized_bodies_are_413() {
        let body = vec![b' '; MAX_BODY + 1];
        assert_eq!(
            decode_request(paths::RESULT, &body).unwrap_err().status,
            413
        );
    }

    #[test]
    fn a_prepare_is_checked_before_any_state_is_touched() {
        let mut spec = crate::workload::test_spec(2, 1, 1);
        let base = |spec: &crate::workload::Spec, vms: &[u32], threads: Option<u32>, t: &str| {
            serde_json::to_string(&wire::PrepareRequest {
                run: 1,
                spec: spec.into(),
                vms: vms.to_vec(),
                targets: vec![t.into()],
                threads,
                allow_overwrite: false,
                verify_run: 0,
            })
            .unwrap()
        };
        let ok = decode_request(
            paths::PREPARE,
            base(&spec, &[0, 1], None, "null:").as_bytes(),
        );
        assert!(matches!(ok, Ok(AgentRequest::Prepare(ref p)) if p.plan.targets.len() == 1));
        for (body, want) in [
            (base(&spec, &[0, 2], None, "null:"), "VM 2"),
            (base(&spec, &[1, 0], None, "null:"), "ascending"),
            (base(&spec, &[0], Some(0), "null:"), "field threads"),
            (base(&spec, &[0], None, "bogus:x"), "field targets"),
        ] {
            let e = err(paths::PREPARE, &body);
            assert_eq!(e.status, 400);
            assert!(e.message.contains(want), "{want}: {}", e.message);
        }
        spec.groups[0].access.iodepth = 0;
        let e = err(paths::PREPARE, &base(&spec, &[0], None, "null:"));
        assert!(e.message.contains("invalid load point"), "{}", e.message);
    }
}
