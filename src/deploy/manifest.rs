//! Kubernetes: `storlab fleet manifest` writes the objects that run a fleet
//! on a cluster, and `storlab fleet discover` is what the controller's Job
//! runs first to find its agents.
//!
//! * a Namespace;
//! * a DaemonSet of agents, one per node, on the node's network
//!   (`hostNetwork`: an agent is addressed as NODE_IP:PORT and listens on
//!   that address only), the token from the Secret `storlab-token` (key
//!   `token`), `--allow` as given, each absolute `--allow` directory a
//!   hostPath volume at the same path, ready once its port accepts;
//! * a headless Service over the agents, whose DNS name resolves to every
//!   ready agent's address;
//! * a Job running the controller: its init container waits until that name
//!   resolves to `--agents` addresses and writes them as a `--hosts` file,
//!   then `storlab run --hosts FILE --token-file ... RUN_ARGS`; the text
//!   summary is the Job's log;
//! * the Secret itself only with `--token-file` (else: `kubectl -n NS create
//!   secret generic storlab-token --from-file=token=FILE`).
//!
//! The image is `deploy/Containerfile`'s: the release binary on
//! debian:bookworm-slim with the libraries it links.

use super::yaml;
use serde_json::{Value, json};
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The Secret holding the token.
pub const SECRET: &str = "storlab-token";
/// The agents' name (DaemonSet, Service, label).
pub const AGENTS: &str = "storlab-agent";
/// The controller's name (Job, label).
pub const CONTROLLER: &str = "storlab-controller";
/// Where the token is mounted in every container.
const TOKEN_DIR: &str = "/run/storlab";

/// What the manifests describe.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestConfig {
    /// The namespace of every object.
    pub namespace: String,
    /// The image (`deploy/Containerfile`'s, pushed to a registry the cluster pulls from).
    pub image: String,
    /// The agents' port on each node.
    pub agent_port: u16,
    /// The agents' `--allow` entries.
    pub allow: Vec<String>,
    /// How many agents the controller waits for (the nodes the DaemonSet runs on).
    pub agents: u32,
    /// A token file to put into the Secret; `None`: the Secret is made apart.
    pub token_file: Option<PathBuf>,
    /// The controller's `storlab run` arguments after `--hosts` and `--token-file`.
    pub run_args: Vec<String>,
}

/// The controller's arguments when none are given: a short null: run with
/// two VMs per agent.
pub fn default_run_args(agents: u32) -> Vec<String> {
    [
        "--target",
        "null:",
        "--vms",
        &(2 * agents.max(1)).to_string(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        "8",
        "--runtime",
        "30",
    ]
    .map(String::from)
    .to_vec()
}

/// One object: a comment above it and the object.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Lines written as `# ...` above it.
    pub comment: Vec<String>,
    /// The object.
    pub object: Value,
}

fn labels(name: &str) -> Value {
    json!({"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "storlab"})
}

fn token_volume() -> Value {
    // 0400: readable by the container's user only.
    json!({"name": "token", "secret": {"secretName": SECRET, "defaultMode": 0o400}})
}

fn token_mount() -> Value {
    json!({"name": "token", "mountPath": TOKEN_DIR, "readOnly": true})
}

/// Whether `s` is a DNS-1123 label (a namespace name).
fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The objects of `cfg`, in the order to apply them.
pub fn documents(cfg: &ManifestConfig) -> Result<Vec<Document>, String> {
    if !dns_label(&cfg.namespace) {
        return Err(format!(
            "--namespace {:?}: not a Kubernetes name (lower-case letters, digits and '-', at most 63)",
            cfg.namespace
        ));
    }
    if cfg.image.trim().is_empty() || cfg.image.contains(char::is_whitespace) {
        return Err(format!("--image {:?}: not an image reference", cfg.image));
    }
    if cfg.allow.is_empty() {
        return Err("--allow: give at least one (null:, a directory, a URL prefix)".into());
    }
    if cfg.agents == 0 {
        return Err("--agents 0: the controller needs at least one agent".into());
    }
    let ns = cfg.namespace.as_str();
    let port = cfg.agent_port;
    let mut args: Vec<String> = [
        "agent",
        "--listen",
        &format!("$(POD_IP):{port}"),
        "--token-file",
        &format!("{TOKEN_DIR}/token"),
        "--name",
        "$(NODE_NAME)",
    ]
    .map(String::from)
    .to_vec();
    let mut mounts = vec![token_mount()];
    let mut volumes = vec![token_volume()];
    for a in &cfg.allow {
        args.extend(["--allow".into(), a.clone()]);
        if a.starts_with("/dev/") {
            return Err(format!(
                "--allow {a}: a block device in a pod needs a privileged container, which this \
                 manifest does not make; allow a directory, or add the device by hand"
            ));
        }
        if a.starts_with('/') {
            let name = format!("data-{}", volumes.len() - 1);
            mounts.push(json!({"name": name, "mountPath": a}));
            volumes
                .push(json!({"name": name, "hostPath": {"path": a, "type": "DirectoryOrCreate"}}));
        }
    }
    let env = json!([
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]);
    let mut docs = vec![Document {
        comment: vec![
            "storlab fleet on Kubernetes, made by `storlab fleet manifest` (docs/fleet.md).".into(),
            format!(
                "Apply: kubectl apply -f THIS; the token: kubectl -n {ns} create secret generic {SECRET} --from-file=token=FILE"
            ),
            format!("Results: kubectl -n {ns} logs job/{CONTROLLER} -c controller"),
        ],
        object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    }];
    if let Some(f) = &cfg.token_file {
        let token = crate::fleet::auth::load_token(f)?;
        docs.push(Document {
            comment: vec![format!("The agents' token, from {}.", f.display())],
            object: json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": SECRET, "namespace": ns},
                "stringData": {"token": token}
            }),
        });
    }
    docs.push(Document {
        comment: vec![
            "One agent per node, on the node's network: NODE_IP:PORT, listening on that address only.".into(),
            "The file backend uses io_uring, which the container runtimes' default seccomp profiles refuse: hence Unconfined.".into(),
        ],
        object: json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": AGENTS, "namespace": ns, "labels": labels(AGENTS)},
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/name": AGENTS}},
                "template": {
                    "metadata": {"labels": labels(AGENTS)},
                    "spec": {
                        "hostNetwork": true,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "securityContext": {"seccompProfile": {"type": "Unconfined"}},
                        "containers": [{
                            "name": "agent",
                            "image": cfg.image,
                            "args": args,
                            "env": env,
                            "ports": [{"name": "agent", "containerPort": port, "protocol": "TCP"}],
                            "readinessProbe": {"tcpSocket": {"port": "agent"}, "periodSeconds": 5},
                            "securityContext": {"allowPrivilegeEscalation": false},
                            "volumeMounts": mounts
                        }],
                        "volumes": volumes
                    }
                }
            }
        }),
    });
    docs.push(Document {
        comment: vec!["Its DNS name resolves to every ready agent's address.".into()],
        object: json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": AGENTS, "namespace": ns, "labels": labels(AGENTS)},
            "spec": {
                "clusterIP": "None",
                "selector": {"app.kubernetes.io/name": AGENTS},
                "ports": [{"name": "agent", "port": port, "targetPort": "agent", "protocol": "TCP"}]
            }
        }),
    });
    let service = format!("{AGENTS}.{ns}.svc:{port}");
    let expect = cfg.agents.to_string();
    let mut run: Vec<String> = [
        "run",
        "--hosts",
        "/work/hosts",
        "--token-file",
        &format!("{TOKEN_DIR}/token"),
        "--no-db",
    ]
    .map(String::from)
    .to_vec();
    run.extend(cfg.run_args.iter().cloned());
    docs.push(Document {
        comment: vec![format!(
            "The controller: waits for {} agent(s) behind {service}, then runs once; its log is the result.",
            cfg.agents
        )],
        object: json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": CONTROLLER, "namespace": ns, "labels": labels(CONTROLLER)},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": labels(CONTROLLER)},
                    "spec": {
                        "restartPolicy": "Never",
                        "initContainers": [{
                            "name": "discover",
                            "image": cfg.image,
                            "args": ["fleet", "discover", "--service", service, "--expect", expect,
                                     "--timeout", "600", "--out", "/work/hosts"],
                            "volumeMounts": [{"name": "work", "mountPath": "/work"}]
                        }],
                        "containers": [{
                            "name": "controller",
                            "image": cfg.image,
                            "args": run,
                            "volumeMounts": [{"name": "work", "mountPath": "/work"}, token_mount()]
                        }],
                        "volumes": [{"name": "work", "emptyDir": {}}, token_volume()]
                    }
                }
            }
        }),
    });
    Ok(docs)
}

/// The manifests of `cfg` as one YAML stream.
pub fn render(cfg: &ManifestConfig) -> Result<String, String> {
    let mut out = String::new();
    for d in documents(cfg)? {
        out.push_str("---\n");
        for c in &d.comment {
            out.push_str(&format!("# {c}\n"));
        }
        out.push_str(&yaml::document(&d.object));
    }
    Ok(out)
}

/// `storlab fleet discover`: wait until `service` (`NAME:PORT`) resolves to
/// at least `expect` addresses, then write them to `out` as a `--hosts`
/// file, one `ADDR:PORT` a line; returns them. `note` hears each change.
pub fn discover(
    service: &str,
    expect: usize,
    timeout: Duration,
    out: &Path,
    note: &dyn Fn(&str),
) -> Result<Vec<String>, String> {
    let (name, port) = service
        .rsplit_once(':')
        .and_then(|(n, p)| Some((n, p.parse::<u16>().ok()?)))
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| format!("--service {service:?}: expected NAME:PORT"))?;
    let deadline = Instant::now() + timeout;
    let mut last: Option<Vec<String>> = None;
    loop {
        let mut found: Vec<String> = (name, port)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.to_string()).collect())
            .unwrap_or_default();
        found.sort();
        found.dedup();
        if last.as_ref() != Some(&found) {
            note(&format!(
                "{name} resolves to {} of {expect} agent(s): {}",
                found.len(),
                found.join(" ")
            ));
            last = Some(found.clone());
        }
        if found.len() >= expect {
            let mut text =
                format!("# the agents behind {service}, found by `storlab fleet discover`\n");
            for a in &found {
                text.push_str(a);
                text.push('\n');
            }
            std::fs::write(out, text).map_err(|e| format!("--out {}: {e}", out.display()))?;
            return Ok(found);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{name} resolves to {} address(es) after {} s, not the {expect} agents asked for \
                 (--expect): {}",
                found.len(),
                timeout.as_secs(),
                if found.is_empty() {
                    "none".into()
                } else {
                    found.join(" ")
                }
            ));
        }
        std::thread::sleep(
            Duration::from_secs(2).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ManifestConfig {
        ManifestConfig {
            namespace: "storlab".into(),
            image: "registry.example/storlab:0.1.0".into(),
            agent_port: 7878,
            allow: vec!["null:".into(), "/srv/storlab".into()],
            agents: 4,
            token_file: None,
            run_args: default_run_args(4),
        }
    }

    #[test]
    fn the_agents_get_the_token_the_allowlist_and_the_node_network() {
        let docs = documents(&cfg()).unwrap();
        let kinds: Vec<&str> = docs
            .iter()
            .map(|d| d.object["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Namespace", "DaemonSet", "Service", "Job"]);
        let pod = &docs[1].object["spec"]["template"]["spec"];
        assert_eq!(pod["hostNetwork"], true);
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "agent",
                "--listen",
                "$(POD_IP):7878",
                "--token-file",
                "/run/storlab/token",
                "--name",
                "$(NODE_NAME)",
                "--allow",
                "null:",
                "--allow",
                "/srv/storlab"
            ]
        );
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], SECRET);
        assert_eq!(pod["volumes"][1]["hostPath"]["path"], "/srv/storlab");
        assert_eq!(
            pod["containers"][0]["volumeMounts"][1]["mountPath"],
            "/srv/storlab"
        );
        let job = &docs[3].object["spec"]["template"]["spec"];
        assert_eq!(
            job["initContainers"][0]["args"][3],
            "storlab-agent.storlab.svc:7878"
        );
        assert_eq!(job["initContainers"][0]["args"][5], "4");
        assert_eq!(job["containers"][0]["args"][2], "/work/hosts");
        let with_secret = ManifestConfig {
            token_file: Some("/nonexistent/token".into()),
            ..cfg()
        };
        assert!(
            documents(&with_secret)
                .unwrap_err()
                .contains("/nonexistent/token")
        );
    }

    #[test]
    fn bad_options_are_named() {
        let e = documents(&ManifestConfig {
            namespace: "Bad_NS".into(),
            ..cfg()
        })
        .unwrap_err();
        assert!(e.contains("--namespace") && e.contains("Bad_NS"), "{e}");
        let e = documents(&ManifestConfig {
            allow: vec!["/dev/sdb".into()],
            ..cfg()
        })
        .unwrap_err();
        assert!(
            e.contains("--allow /dev/sdb") && e.contains("privileged"),
            "{e}"
        );
        let e = documents(&ManifestConfig { agents: 0, ..cfg() }).unwrap_err();
        assert!(e.contains("--agents 0"), "{e}");
    }

    #[test]
    fn discover_writes_a_hosts_file_the_controller_reads() {
        let dir = crate::workload::testing::temp_dir("discover");
        let out = dir.join("hosts");
        let found = discover("localhost:7878", 1, Duration::from_secs(5), &out, &|_| {}).unwrap();
        assert!(
            found
                .iter()
                .any(|a| a == "127.0.0.1:7878" || a == "[::1]:7878"),
            "{found:?}"
        );
        let hosts = crate::fleet::controller::parse_hosts(out.to_str().unwrap()).unwrap();
        assert_eq!(hosts, found);
        let e = discover(
            "localhost:7878",
            99,
            Duration::from_millis(100),
            &out,
            &|_| {},
        )
        .unwrap_err();
        assert!(
            e.contains("not the 99 agents") && e.contains("--expect"),
            "{e}"
        );
        assert!(
            discover("nope", 1, Duration::ZERO, &out, &|_| {})
                .unwrap_err()
                .contains("NAME:PORT")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
