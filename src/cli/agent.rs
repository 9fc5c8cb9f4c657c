//! `storlab agent`: serve runs for a fleet controller until killed.

use super::{CliError, ExitCode};
use crate::fleet::agent::{Agent, AgentConfig, AgentTls};
use crate::fleet::allow::Allowlist;
use crate::fleet::auth;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `storlab agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// Address to listen on, ADDR:PORT. Without --token-file only a loopback
    /// address (127.0.0.1:PORT, [::1]:PORT) is accepted.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,
    /// File holding the bearer token every request must carry (required
    /// unless --listen is a loopback address).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve HTTPS with this PEM certificate (chain); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Targets the agent may touch: directories or files (symlinks resolved), or
    /// URL prefixes (null:, nfs://HOST/EXPORT, iscsi://HOST, nbd://HOST). Repeat.
    #[arg(long, value_name = "PATH_OR_URL_PREFIX", num_args = 1.., required = true)]
    pub allow: Vec<String>,
    /// Stop a run after this many seconds without a request from its controller.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub controller_timeout: u64,
    /// Name in results and metrics (default: the host name).
    #[arg(long)]
    pub name: Option<String>,
}

/// Run `storlab agent`.
pub fn run(args: AgentArgs) -> Result<ExitCode, CliError> {
    let token = args
        .token_file
        .as_deref()
        .map(auth::load_token)
        .transpose()
        .map_err(CliError::input)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(c), Some(k)) => Some(AgentTls::load(c, k).map_err(CliError::input)?),
        _ => None,
    };
    let allow = Allowlist::new(&args.allow).map_err(CliError::input)?;
    if args.controller_timeout == 0 {
        return Err(CliError::input(
            "invalid --controller-timeout = 0 (allowed: 1 or more seconds)",
        ));
    }
    let tokenless = token.is_none();
    let https = tls.is_some();
    let cfg = AgentConfig {
        name: args.name.unwrap_or_else(crate::runner::local_name),
        token,
        tls,
        allow,
        idle_timeout: Duration::from_secs(args.controller_timeout),
        handlers: 8,
    };
    // Verify maps saved here carry the agent's name (two agents on one host).
    crate::verify::set_map_tag(&format!("agent-{}", cfg.name));
    // A refused address is the user's input, named with the flag to pass.
    let agent = Agent::start(&args.listen, cfg).map_err(|e| {
        if e.starts_with("refusing") {
            CliError::input(e)
        } else {
            CliError::failed(e)
        }
    })?;
    eprintln!(
        "storlab agent listening on {} ({}protocol {}, storlab {})",
        agent.local_addr(),
        if https { "HTTPS, " } else { "" },
        crate::fleet::wire::PROTOCOL_VERSION,
        crate::fleet::wire::STORLAB_VERSION
    );
    if tokenless {
        eprintln!(
            "storlab agent: no --token-file: any local user can drive this agent (loopback only)"
        );
    }
    agent.wait();
    Ok(ExitCode::Ok)
}
