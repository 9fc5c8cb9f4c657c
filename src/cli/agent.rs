//! `storlab agent`: serve runs for a fleet controller until killed.

use super::{CliError, ExitCode};
use crate::fleet::agent::{Agent, AgentConfig};
use crate::fleet::allow::Allowlist;
use crate::fleet::auth;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `storlab agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// Address to listen on, ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,
    /// File holding the bearer token every request must carry.
    #[arg(long, value_name = "FILE")]
    pub token_file: PathBuf,
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
    let token = auth::load_token(&args.token_file).map_err(CliError::input)?;
    let allow = Allowlist::new(&args.allow).map_err(CliError::input)?;
    if args.controller_timeout == 0 {
        return Err(CliError::input(
            "invalid --controller-timeout = 0 (allowed: 1 or more seconds)",
        ));
    }
    let cfg = AgentConfig {
        name: args.name.unwrap_or_else(crate::engine::runner::local_name),
        token,
        allow,
        idle_timeout: Duration::from_secs(args.controller_timeout),
        handlers: 8,
    };
    let agent = Agent::start(&args.listen, cfg).map_err(CliError::failed)?;
    eprintln!(
        "storlab agent listening on {} (protocol {}, storlab {})",
        agent.local_addr(),
        crate::fleet::wire::PROTOCOL_VERSION,
        crate::fleet::wire::STORLAB_VERSION
    );
    agent.wait();
    Ok(ExitCode::Ok)
}
