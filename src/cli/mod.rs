//! Command-line interface, in two stages: clap parses what the user typed into
//! the structs here; each command then validates and builds the objects it runs.
//! Errors become one line on stderr and an exit code (see [`ExitCode`]).

mod agent;
mod compare;
mod convert;
mod diff;
mod fleet;
pub mod lab;
mod media;
pub mod meta;
pub mod output;
mod replay;
pub mod report;
pub mod results;
mod run;
mod session;
mod study;
pub mod verify;
pub mod wire;

pub use crate::measure::signals;
use crate::workload::Profile;
use crate::workload::catalogue::Catalogue;
use crate::workload::flags::Flags;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything ran.
    Ok = 0,
    /// The storage, a server or a host failed (I/O error, no space left,
    /// target lost), while measuring or while preparing; results were saved.
    Failed = 1,
    /// Bad input (an option, job file, target or file the user must change): nothing ran.
    BadInput = 2,
    /// `results diff --fail-on worse[:PCT]`: a figure is significantly worse
    /// by more than PCT (each one named on stderr).
    Worse = 3,
    /// Interrupted by SIGINT/SIGTERM, whether or not something also failed
    /// (the error line then says both); results were saved.
    Interrupted = 130,
}

impl From<crate::measure::Outcome> for ExitCode {
    fn from(o: crate::measure::Outcome) -> ExitCode {
        use crate::measure::Outcome;
        match o {
            Outcome::Ok => ExitCode::Ok,
            Outcome::Failed => ExitCode::Failed,
            Outcome::BadInput => ExitCode::BadInput,
            Outcome::Interrupted => ExitCode::Interrupted,
        }
    }
}

/// A failure the CLI reports as one line.
#[derive(Debug)]
pub struct CliError {
    /// Exit code.
    pub code: ExitCode,
    /// The message, naming the thing.
    pub message: String,
}

impl CliError {
    /// Bad input.
    pub fn input(message: impl Into<String>) -> Self {
        CliError {
            code: ExitCode::BadInput,
            message: message.into(),
        }
    }
    /// Failure while running.
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            code: ExitCode::Failed,
            message: message.into(),
        }
    }
}

impl From<crate::measure::Error> for CliError {
    fn from(e: crate::measure::Error) -> CliError {
        CliError {
            code: e.outcome.into(),
            message: e.message,
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "storlab",
    version,
    about = "Storage protocol benchmark: the same VM workloads over every protocol, side by side"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Built-in workload profile.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProfileArg {
    /// Same shape in seconds and MiBs.
    Quick,
    /// The study's own durations and sizes.
    Full,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Quick => Profile::Quick,
            ProfileArg::Full => Profile::Full,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a built-in workload, a job file, or fio-style flags against targets.
    Run(Box<RunArgs>),
    /// Run the same workload on several targets in turn and show them relative to a baseline.
    Compare(Box<CompareArgs>),
    /// Run a reference study on its own lab and write its report (`storlab study list`).
    Study(Box<study::StudyArgs>),
    /// Serve runs for a fleet controller (`storlab run --hosts`): see docs/fleet.md.
    Agent(agent::AgentArgs),
    /// Agents deployed over ssh or on Kubernetes: deploy, status, stop, manifest (docs/fleet.md).
    Fleet {
        #[command(subcommand)]
        cmd: fleet::FleetCmd,
    },
    /// The protocol lab: one backing store served over NFS, iSCSI and NBD.
    Lab {
        #[command(subcommand)]
        cmd: lab::LabCmd,
    },
    /// The results database: list runs, show one, export one as JSON or CSV.
    Results(results::ResultsArgs),
    /// A report over runs (ids or --json files), every target relative to a baseline.
    Report(report::ReportArgs),
    /// Re-read what a `--verify` run wrote (or a `--journal`) and check every block.
    Verify(verify::VerifyArgs),
    /// Print a fio job file (or an Iometer .icf) as the equivalent storlab TOML job file.
    Convert(convert::ConvertArgs),
    /// The wire-efficiency model: user data each protocol and link carry (docs/wire-model.md).
    Wire(wire::WireArgs),
    /// File and metadata workload: many small files (create, write, read, stat, rename,
    /// delete, list) or one large file's copy, on file:DIR or over NFS.
    Meta(Box<meta::MetaArgs>),
    /// The emulated media presets: list them, or the model's prediction for one (docs/media.md).
    Media(media::MediaArgs),
    /// Serve the emulated media's FUSE file system (started by the lab).
    #[command(name = "media-serve", hide = true)]
    MediaServe(media::MediaServeArgs),
    /// List the workloads and suites (built-in and the user's), or show one in full.
    Workloads {
        #[command(subcommand)]
        sub: Option<WorkloadsCmd>,
        /// A catalogue file of workloads and suites to add (repeatable).
        #[arg(long = "catalogue", value_name = "FILE", global = true)]
        catalogue: Vec<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum WorkloadsCmd {
    /// Print a workload's full spec and where each value comes from.
    Show {
        /// Workload or suite name.
        name: String,
        /// Profile to show.
        #[arg(long, value_enum, default_value = "full")]
        profile: ProfileArg,
    },
}

/// What to run: a built-in workload or suite, a job file, or flags alone.
#[derive(clap::Args, Debug)]
pub struct JobArgs {
    /// Built-in workload or suite (see `storlab workloads`).
    #[arg(long, short = 'w', conflicts_with_all = ["job", "fio", "icf"])]
    pub workload: Option<String>,
    /// A catalogue file of workloads and suites to add (repeatable).
    #[arg(long = "catalogue", value_name = "FILE", requires = "workload")]
    pub catalogue: Vec<PathBuf>,
    /// TOML job file (see examples/jobs/).
    #[arg(long, short = 'j', conflicts_with_all = ["fio", "icf"])]
    pub job: Option<PathBuf>,
    /// fio job file (see examples/fio/): its jobs, and its target when --target is not given.
    #[arg(long, value_name = "JOB.fio", conflicts_with = "icf")]
    pub fio: Option<PathBuf>,
    /// Iometer configuration file (see examples/iometer/): each access specification a load point.
    #[arg(long, value_name = "FILE.icf")]
    pub icf: Option<PathBuf>,
    /// Profile of a built-in workload.
    #[arg(long, value_enum, default_value = "quick")]
    pub profile: ProfileArg,
    /// fio-named overrides.
    #[command(flatten)]
    pub flags: Flags,
    /// vdbench-style curve: run each load point unthrottled to find its max IOPS,
    /// then at these percentages of it with an open-loop rate (latency from each
    /// I/O's scheduled time). No value: 10,50,70,80,90,100; off: no curve.
    #[arg(long, value_name = "PCT,...", num_args = 0..=1, default_missing_value = "")]
    pub curve: Option<String>,
    /// Replay a trace instead of a workload: fio's iolog (v2 or v3) or blkparse's
    /// text output, each I/O at its trace time, open loop (docs/replay.md).
    /// Trace device k goes to --target k (mod the targets given).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workload", "job", "fio", "icf", "curve"])]
    pub replay: Option<PathBuf>,
    /// Time runs this many times as fast as the trace's (2: twice as fast, 0.5: half).
    #[arg(long, value_name = "X", requires = "replay")]
    pub replay_speed: Option<String>,
}

/// Where a command that records its runs records them: `run`, `compare`,
/// `study` and `meta`.
#[derive(clap::Args, Clone, Debug)]
pub struct RecordArgs {
    /// Which results database.
    #[command(flatten)]
    pub db: DbArg,
    /// Do not record the run in the results database.
    #[arg(long)]
    pub no_db: bool,
}

impl RecordArgs {
    /// Open the results database unless `--no-db`.
    pub fn open(&self) -> Result<Option<crate::store::Store>, CliError> {
        if self.no_db {
            Ok(None)
        } else {
            output::open_store(self.db.path.as_deref()).map(Some)
        }
    }
}

/// `--db`, for every command that reads or records runs (`results` makes it global).
#[derive(clap::Args, Clone, Debug)]
pub struct DbArg {
    /// Results database (default: $STORLAB_DB, else ~/.local/share/storlab/results.db).
    #[arg(long = "db", id = "db", value_name = "PATH")]
    pub path: Option<PathBuf>,
}

/// Where results go and how the run behaves, for `run` and `compare`.
#[derive(clap::Args, Debug)]
pub struct OutArgs {
    /// Write the full result (spec, environment, every interval, histograms) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the interval time series as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// The results database.
    #[command(flatten)]
    pub record: RecordArgs,
    /// Let storlab write into files, devices or exports it did not create (destroys their data).
    #[arg(long)]
    pub allow_overwrite: bool,
    /// Print the SQLIO-style 1 ms latency histogram of every load point.
    #[arg(long)]
    pub histogram: bool,
    /// Serve a live page of the run on ADDR (PORT on 127.0.0.1, or IP:PORT:
    /// loopback, or anywhere with the fleet's --token-file, which the page
    /// then asks for).
    #[arg(long, value_name = "ADDR")]
    pub web: Option<String>,
    /// Threads, progress lines and repeats.
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// How a command that measures runs its load points: `run`, `compare` and
/// `study` (which words `--repeat`'s help for its tables).
#[derive(clap::Args, Clone, Debug)]
pub struct ExecArgs {
    /// Most engine threads (default: online CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Run every load point N times; summaries show the mean and its 95% confidence interval.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

/// Where `run`, `compare` and `study` run their load points: on agents
/// (`storlab agent`) instead of this process.
#[derive(clap::Args, Clone, Debug)]
pub struct FleetArgs {
    /// Run on agents: HOST:PORT,HOST:PORT or a file with one HOST:PORT per line.
    #[arg(long, value_name = "LIST|FILE", requires = "token_file")]
    pub hosts: Option<String>,
    /// File holding the agents' bearer token (with --hosts).
    #[arg(long, value_name = "FILE", requires = "hosts")]
    pub token_file: Option<PathBuf>,
    /// Speak HTTPS to the agents, trusting this PEM CA or agent certificate (with --hosts).
    #[arg(long, value_name = "FILE", requires = "hosts")]
    pub tls_ca: Option<PathBuf>,
    /// Deal VMs to hosts in blocks of N (8 hosts x 16 VMs); default: round-robin.
    #[arg(long, value_name = "N", requires = "hosts")]
    pub vms_per_host: Option<u32>,
    /// What a lost agent does to the run: stop it, or go on with the others.
    #[arg(long, value_enum, default_value = "stop")]
    pub on_host_loss: crate::runner::HostLoss,
}

impl FleetArgs {
    /// The fleet these arguments name (`None`: no `--hosts`, run here), its
    /// agents running up to `threads` engine threads each, allowed to
    /// overwrite what storlab did not create when `allow_overwrite`.
    pub fn config(
        &self,
        threads: Option<usize>,
        allow_overwrite: bool,
    ) -> Result<Option<crate::fleet::controller::FleetConfig>, CliError> {
        use crate::fleet::{auth, controller};
        let Some(h) = &self.hosts else {
            return Ok(None);
        };
        Ok(Some(controller::FleetConfig {
            hosts: controller::parse_hosts(h).map_err(CliError::input)?,
            token: auth::load_token(
                self.token_file
                    .as_deref()
                    .ok_or_else(|| CliError::input("--hosts needs --token-file FILE"))?,
            )
            .map_err(CliError::input)?,
            vms_per_host: self.vms_per_host,
            on_loss: self.on_host_loss,
            threads,
            allow_overwrite,
            tls: self
                .tls_ca
                .as_deref()
                .map(crate::fleet::remote::TlsTrust::load)
                .transpose()
                .map_err(CliError::input)?,
        }))
    }
}

/// Arguments of `storlab run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// What to run.
    #[command(flatten)]
    pub job: JobArgs,
    /// Target: file:PATH, null:, nfs://, iscsi://, nbd:// (see docs/guide/targets.md). Repeat to spread disks over several.
    #[arg(long = "target", short = 't', value_name = "URL")]
    pub targets: Vec<String>,
    /// Outputs and run options.
    #[command(flatten)]
    pub out: OutArgs,
    /// The agents that run it (default: this process).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// What stdout gets at the end: storlab's text summary, or a fio-compatible
    /// JSON document (fio-jsonplus adds fio's latency bins).
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,
}

/// What `storlab run` prints on stdout when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// storlab's text summary.
    Text,
    /// fio's `--output-format=json` document.
    FioJson,
    /// fio's `--output-format=json+` document (with latency bins).
    FioJsonplus,
}

/// Arguments of `storlab compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Instead of running: two stored runs (or sets: 3,4,5 8,9,10) to compare over
    /// time, as `storlab results diff OLD NEW` does.
    #[arg(value_names = ["RUN_A", "RUN_B"], num_args = 2, conflicts_with_all = ["targets", "baseline", "lab", "state_dir"])]
    pub runs: Vec<String>,
    /// What to run on every target.
    #[command(flatten)]
    pub job: JobArgs,
    /// Targets in order: lab names (block, fc1, fc2, fc4, fc8, fc16, fc32, fcoe10,
    /// local, nfs3, nfs4, nfs41, iscsi, nbd), NAME=URL, or URLs. With --lab, default
    /// fc8,nfs3,nfs4,iscsi,nbd: the block baseline on 8 Gb FC = 100.
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present_any = ["runs", "lab"],
        value_name = "T1,T2,..."
    )]
    pub targets: Vec<String>,
    /// The target every figure is relative to (= 100); default: the first.
    #[arg(long)]
    pub baseline: Option<String>,
    /// The lab's state directory (for lab target names).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Bring up a temporary lab (RAM backing, 1 GiB, on --media) for this
    /// comparison and take it down afterwards, whatever happens.
    #[arg(long, conflicts_with = "state_dir")]
    pub lab: bool,
    /// The temporary lab's media (see `storlab lab up --media`; default array-15k).
    #[arg(long, requires = "lab")]
    pub media: Option<String>,
    /// The temporary lab's media file (see `storlab lab up --media-file`).
    #[arg(long, requires = "lab", value_name = "FILE")]
    pub media_file: Option<PathBuf>,
    /// The temporary lab's servers in a namespace of their own behind a
    /// link shaped with tc tbf (see `storlab lab up --link`): 1gbe, 10gbe,
    /// 25gbe or a rate like 500mbit (default: on 127.0.0.1, unshaped).
    #[arg(long, requires = "lab", value_name = "1gbe|10gbe|25gbe|RATE",
          value_parser = crate::lab::Link::parse)]
    pub link: Option<crate::lab::Link>,
    /// Outputs and run options.
    #[command(flatten)]
    pub out: OutArgs,
    /// The agents that run every target's points (default: this process).
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// Parse `args` and run the command; returns the exit code.
pub fn main_with(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::BadInput as i32
            } else {
                0
            };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Run(a) => run::run(*a, args),
        Command::Compare(a) => compare::run(*a, args),
        Command::Study(a) => study::run(*a, args),
        Command::Agent(a) => agent::run(a),
        Command::Fleet { cmd } => fleet::run(cmd),
        Command::Lab { cmd } => lab::run(cmd),
        Command::Results(a) => results::run(a),
        Command::Report(a) => report::run(a),
        Command::Verify(a) => verify::run(a),
        Command::MediaServe(a) => media::run(a),
        Command::Media(a) => media::media(a),
        Command::Meta(a) => meta::run(*a, args),
        Command::Wire(a) => wire::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Workloads { sub, catalogue } => Catalogue::user(&catalogue)
            .and_then(|cat| match sub {
                None => Ok(cat.list_text()),
                Some(WorkloadsCmd::Show { name, profile }) => cat.show_text(&name, profile.into()),
            })
            .map(|text| {
                print!("{text}");
                ExitCode::Ok
            })
            .map_err(|e| CliError::input(e.to_string())),
    };
    match result {
        Ok(code) => code as i32,
        Err(e) => {
            eprintln!("storlab: error: {}", e.message);
            e.code as i32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn compare_targets_help_names_every_lab_target() {
        let cmd = Cli::command();
        let compare = cmd.find_subcommand("compare").unwrap();
        let targets = compare
            .get_arguments()
            .find(|a| a.get_id() == "targets")
            .unwrap();
        let help = targets.get_help().unwrap().to_string().replace('\n', " ");
        assert!(
            help.contains(&format!("lab names ({})", crate::lab::LabTarget::allowed())),
            "{help}"
        );
    }
}
