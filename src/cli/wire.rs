//! `storlab wire`: the wire-efficiency model's table (docs/wire-model.md).

use super::{CliError, ExitCode};
use crate::lab::LabTarget;
use crate::linkmodel::table::{self, Filter, Row};

/// Arguments of `storlab wire`.
#[derive(clap::Args, Debug)]
pub struct WireArgs {
    /// Protocols, a comma list: iscsi, nfs3, nfs4, nfs4.1, nbd, nbd-structured, fc, fcoe
    /// (default: all but nbd-structured).
    #[arg(long, value_name = "LIST")]
    pub protocol: Option<String>,
    /// Links, a comma list: 1gbe, 10gbe, 25gbe, 40gbe, 100gbe, 1gfc, 2gfc, 4gfc, 8gfc, 16gfc,
    /// 32gfc (default: all).
    #[arg(long, value_name = "LIST")]
    pub link: Option<String>,
    /// MTUs of the IP protocols' rows, a comma list (default: 1500,9000); FC and FCoE rows
    /// keep their own frames.
    #[arg(long, value_name = "LIST")]
    pub mtu: Option<String>,
    /// I/O sizes, a comma list of fio-style sizes (default: 4k,8k,64k,1m).
    #[arg(long, value_name = "LIST")]
    pub bs: Option<String>,
    /// Print JSON (every estimate with frames and line bytes per I/O, and the assumptions).
    #[arg(long)]
    pub json: bool,
}

/// Run `storlab wire`.
pub fn run(args: WireArgs) -> Result<ExitCode, CliError> {
    let filter = Filter::parse(
        args.protocol.as_deref(),
        args.link.as_deref(),
        args.mtu.as_deref(),
        args.bs.as_deref(),
    )
    .map_err(CliError::input)?;
    let rows = filter.rows().map_err(CliError::input)?;
    let labs = lab_targets(&rows);
    if args.json {
        let mut doc = table::json(&rows);
        doc["lab_targets"] = labs
            .iter()
            .map(|(t, protocol, link)| {
                serde_json::json!({ "name": t.name(), "label": t.label(), "protocol": protocol, "link": link })
            })
            .collect();
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::failed(format!("cannot encode the table as JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", table::text(&rows, &filter.sizes));
        if !labs.is_empty() {
            let named: Vec<String> = labs
                .iter()
                .map(|(t, protocol, link)| format!("{t} ({protocol} {link})"))
                .collect();
            println!(
                "Lab targets capped at these rows' rates: {}.",
                named.join(", ")
            );
        }
    }
    Ok(ExitCode::Ok)
}

/// The lab targets whose block path is capped at one of `rows` (its
/// protocol on its link), with that row's protocol and link, in the lab's
/// order.
fn lab_targets(rows: &[Row]) -> Vec<(LabTarget, &'static str, String)> {
    LabTarget::all()
        .filter_map(|t| {
            let (wire, link) = t.cap()?;
            let protocol = wire.protocol();
            rows.iter()
                .filter_map(|r| r.read.first())
                .any(|e| e.protocol == protocol && e.link == link)
                .then(|| (t, protocol.as_str(), link.to_string()))
        })
        .collect()
}
