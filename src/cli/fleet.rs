//! `storlab fleet`: agents deployed by an orchestrator that already exists:
//! over ssh (`deploy`, `status`, `stop`; the hidden `host-up`, `supervise`
//! and `host-down` are what a deploy runs on each host) or on Kubernetes
//! (`manifest`, and `discover`, the controller Job's first step). See
//! docs/fleet.md.

use super::{CliError, ExitCode};
use crate::deploy::{self, DeployConfig, HostLines, host, manifest, ssh::SshOptions};
use std::path::PathBuf;
use std::time::Duration;

/// `storlab fleet` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum FleetCmd {
    /// Copy this storlab and the token to hosts over ssh, start each agent
    /// under a supervisor, check its version and clock; writes DIR/hosts
    /// for `--hosts`.
    Deploy(Box<DeployArgs>),
    /// Say hello to every agent of a deployed fleet: version and clock.
    Status {
        /// The fleet's directory (as given to deploy).
        #[arg(long, default_value = "storlab-fleet")]
        dir: PathBuf,
        /// Fail for an agent whose clock is further off than this, ms.
        #[arg(long, value_name = "MS", default_value_t = deploy::MAX_CLOCK_OFFSET_MS)]
        max_clock_offset: f64,
    },
    /// Stop a deployed fleet's agents (by PID) and remove what the deploy
    /// copied; each agent's log is kept in DIR/logs.
    Stop {
        /// The fleet's directory (as given to deploy).
        #[arg(long, default_value = "storlab-fleet")]
        dir: PathBuf,
        /// Hosts stopped at once.
        #[arg(long, default_value_t = 16)]
        parallel: usize,
    },
    /// Print Kubernetes objects for a fleet: a DaemonSet of agents (token
    /// from a Secret, node network), a headless Service, a Job running the
    /// controller. Arguments after `--` are the controller's `storlab run`
    /// arguments.
    Manifest(ManifestArgs),
    /// Wait until NAME resolves to N addresses and write them as a `--hosts`
    /// file (the controller Job's init container runs this).
    Discover {
        /// The agents' Service, NAME:PORT.
        #[arg(long, value_name = "NAME:PORT")]
        service: String,
        /// How many agents to wait for.
        #[arg(long, value_name = "N")]
        expect: usize,
        /// Give up after this many seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 600)]
        timeout: u64,
        /// The hosts file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Start the supervised agent in a deployed directory (run by deploy over ssh).
    #[command(hide = true)]
    HostUp {
        /// The agent's directory.
        #[arg(long)]
        dir: PathBuf,
        /// The agent's --listen.
        #[arg(long)]
        listen: String,
        /// More `storlab agent` arguments.
        #[arg(last = true)]
        agent_args: Vec<String>,
    },
    /// Run the agent, restarting it when it exits (started by host-up).
    #[command(hide = true)]
    Supervise {
        /// The agent's directory.
        #[arg(long)]
        dir: PathBuf,
        /// The `storlab agent` arguments.
        #[arg(last = true)]
        agent_args: Vec<String>,
    },
    /// Stop the agent and its supervisor, remove the directory (run by stop over ssh).
    #[command(hide = true)]
    HostDown {
        /// The agent's directory.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Arguments of `storlab fleet deploy`.
#[derive(clap::Args, Debug)]
pub struct DeployArgs {
    /// The hosts: [USER@]HOST[:SSHPORT],... or a file with one a line,
    /// `[USER@]HOST[:SSHPORT] [AGENT_HOST:PORT]` (`#` comments).
    #[arg(long, value_name = "LIST|FILE")]
    pub hosts: String,
    /// The fleet's directory here: its record (fleet.json), the agents'
    /// list (hosts), the token when none is given, the agents' logs.
    #[arg(long, default_value = "storlab-fleet")]
    pub dir: PathBuf,
    /// What the agents may touch (their --allow): directories, null:, URL prefixes. Repeat.
    #[arg(long, value_name = "PATH_OR_URL_PREFIX", num_args = 1.., required_unless_present = "allow_lab")]
    pub allow: Vec<String>,
    /// Also allow the agents the network targets (NFS, iSCSI, NBD) and null:
    /// of the lab in this state directory, as the lab's own agents are.
    #[arg(long, value_name = "STATE_DIR")]
    pub allow_lab: Option<PathBuf>,
    /// The agents' port, on each host's address.
    #[arg(long, default_value_t = deploy::AGENT_PORT)]
    pub agent_port: u16,
    /// The token file to give the agents (default: a fresh one, DIR/token).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// ssh's config file (ssh -F).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// An ssh option (ssh -o KEY=VALUE), e.g. IdentityFile=~/.ssh/fleet. Repeat.
    #[arg(long = "ssh-option", short = 'o', value_name = "KEY=VALUE")]
    pub ssh_options: Vec<String>,
    /// The storlab binary to copy (default: this one).
    #[arg(long, value_name = "FILE")]
    pub binary: Option<PathBuf>,
    /// The directory on each host under which the agent's own directory is made.
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub remote_dir: String,
    /// Refuse an agent whose clock is further than this from this host's, ms.
    #[arg(long, value_name = "MS", default_value_t = deploy::MAX_CLOCK_OFFSET_MS)]
    pub max_clock_offset: f64,
    /// The agents' --controller-timeout, seconds.
    #[arg(long, value_name = "SECONDS")]
    pub controller_timeout: Option<u64>,
    /// Hosts deployed at once.
    #[arg(long, default_value_t = 16)]
    pub parallel: usize,
}

/// Arguments of `storlab fleet manifest`.
#[derive(clap::Args, Debug)]
pub struct ManifestArgs {
    /// The namespace of every object.
    #[arg(long, default_value = "storlab")]
    pub namespace: String,
    /// The image built from deploy/Containerfile.
    #[arg(long, default_value = concat!("registry.example/storlab:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// The agents' port on each node.
    #[arg(long, default_value_t = deploy::AGENT_PORT)]
    pub agent_port: u16,
    /// What the agents may touch (their --allow). Repeat.
    #[arg(long, value_name = "PATH_OR_URL_PREFIX", num_args = 1.., required = true)]
    pub allow: Vec<String>,
    /// How many agents the controller waits for (the nodes the agents run on).
    #[arg(long, value_name = "N")]
    pub agents: u32,
    /// Put this token file into the Secret (default: no Secret; make it with kubectl).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The controller's `storlab run` arguments (default: a 30 s null: run, two VMs per agent).
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

/// Print each host's line: as it is, or on stderr when it is a failure.
fn print_line(r: &Result<String, String>) {
    match r {
        Ok(l) => println!("{l}"),
        Err(l) => eprintln!("storlab: {l}"),
    }
}

/// The exit of a deploy, status or stop whose lines were printed as they came.
/// `what` names the command and what became of the hosts when some failed;
/// a failure before any host (no fleet recorded, a bad token file) is the
/// one line already printed.
fn outcome(r: Result<HostLines, HostLines>, what: &str) -> Result<ExitCode, CliError> {
    match r {
        Ok(_) => Ok(ExitCode::Ok),
        Err(lines) => {
            let hosts = lines
                .iter()
                .filter(|l| l.as_ref().is_err_and(|e| e.starts_with("host ")))
                .count();
            let cmd = what.split(" (").next().unwrap_or(what);
            Err(CliError::failed(if hosts == 0 {
                format!("{cmd}: nothing was done")
            } else {
                format!("{what}: {hosts} host(s) failed, each named above")
            }))
        }
    }
}

/// Print a JSON line for the controller that ran this over ssh.
fn json_line<T: serde::Serialize>(v: &T) -> ExitCode {
    println!("{}", serde_json::to_string(v).expect("serializable"));
    ExitCode::Ok
}

/// Run `storlab fleet ...`.
pub fn run(cmd: FleetCmd) -> Result<ExitCode, CliError> {
    match cmd {
        FleetCmd::Deploy(a) => deploy_cmd(*a),
        FleetCmd::Status {
            dir,
            max_clock_offset,
        } => outcome(
            deploy::status(&dir, 16, max_clock_offset, &print_line),
            "fleet status",
        ),
        FleetCmd::Stop { dir, parallel } => {
            let r = deploy::stop(&dir, parallel, &print_line);
            outcome(
                r,
                "fleet stop (the hosts not stopped stay in the record: run it again)",
            )
            .inspect(|_| println!("fleet deployed from {} stopped", dir.display()))
        }
        FleetCmd::Manifest(a) => {
            let run_args = if a.run_args.is_empty() {
                manifest::default_run_args(a.agents)
            } else {
                a.run_args
            };
            let cfg = manifest::ManifestConfig {
                namespace: a.namespace,
                image: a.image,
                agent_port: a.agent_port,
                allow: a.allow,
                agents: a.agents,
                token_file: a.token_file,
                run_args,
            };
            print!("{}", manifest::render(&cfg).map_err(CliError::input)?);
            Ok(ExitCode::Ok)
        }
        FleetCmd::Discover {
            service,
            expect,
            timeout,
            out,
        } => {
            let found =
                manifest::discover(&service, expect, Duration::from_secs(timeout), &out, &|m| {
                    eprintln!("storlab fleet discover: {m}")
                })
                .map_err(CliError::failed)?;
            println!("{} agent(s) written to {}", found.len(), out.display());
            Ok(ExitCode::Ok)
        }
        FleetCmd::HostUp {
            dir,
            listen,
            agent_args,
        } => host::host_up(&dir, &listen, &agent_args)
            .map(|up| json_line(&up))
            .map_err(CliError::failed),
        FleetCmd::Supervise { dir, agent_args } => host::supervise(&dir, &agent_args)
            .map(|_| ExitCode::Ok)
            .map_err(CliError::failed),
        FleetCmd::HostDown { dir } => host::host_down(&dir)
            .map(|down| json_line(&down))
            .map_err(CliError::failed),
    }
}

fn deploy_cmd(a: DeployArgs) -> Result<ExitCode, CliError> {
    let hosts = deploy::parse_hosts(&a.hosts, a.agent_port).map_err(CliError::input)?;
    if a.parallel == 0 {
        return Err(CliError::input("invalid --parallel 0 (allowed: 1 or more)"));
    }
    if a.max_clock_offset.is_nan() || a.max_clock_offset < 0.0 {
        return Err(CliError::input(format!(
            "invalid --max-clock-offset {} (allowed: 0 or more ms)",
            a.max_clock_offset
        )));
    }
    for o in &a.ssh_options {
        if !o.contains('=') {
            return Err(CliError::input(format!(
                "invalid --ssh-option {o:?} (expected KEY=VALUE, as ssh -o takes)"
            )));
        }
    }
    let mut allow = a.allow;
    if let Some(dir) = &a.allow_lab {
        let targets = crate::lab::status(dir).and_then(|st| st.targets).ok_or_else(|| {
            CliError::input(format!(
                "--allow-lab {}: no lab with targets recorded there (is it up? `storlab lab status --state-dir {}`)",
                dir.display(),
                dir.display()
            ))
        })?;
        for t in crate::lab::agent_allow(&targets) {
            if !allow.contains(&t) {
                allow.push(t);
            }
        }
    }
    let binary = match a.binary {
        Some(b) => b,
        None => std::env::current_exe()
            .map_err(|e| CliError::failed(format!("cannot find this storlab binary: {e}")))?,
    };
    let cfg = DeployConfig {
        hosts,
        ssh: SshOptions {
            config: a.ssh_config,
            options: a.ssh_options,
        },
        binary,
        token_file: a.token_file,
        allow,
        controller_timeout: a.controller_timeout,
        remote_parent: a.remote_dir,
        max_clock_offset_ms: a.max_clock_offset,
        dir: a.dir.clone(),
        parallel: a.parallel,
    };
    let r = deploy::deploy(&cfg, &print_line);
    if let Ok(lines) = &r {
        let st = deploy::FleetState::load(&cfg.dir)
            .ok()
            .flatten()
            .unwrap_or_default();
        println!(
            "fleet of {} agent(s) deployed from {}\n  run:  storlab run --hosts {} --token-file {} ...\n  stop: storlab fleet stop --dir {}",
            lines.len(),
            cfg.dir.display(),
            cfg.dir.join(deploy::HOSTS_FILE).display(),
            st.token_file.display(),
            cfg.dir.display()
        );
    }
    outcome(
        r,
        "fleet deploy (every host that came up was stopped again and its directory removed)",
    )
}
