//! nbdkit with the file plugin: export [`EXPORT`] of the backing file on the
//! storage host's address.

use super::LabError;
use super::netns::Netns;
use super::process::{self, Proc};
use super::ready;
use super::rpcbind;
use super::tools::Tools;
use std::path::Path;

/// The NBD export name.
pub const EXPORT: &str = "storlab";

/// Start nbdkit inside the storage host, listening on `ns.ns_addr:port`.
pub fn start(tools: &Tools, anchor: &Proc, ns: &Netns, port: u16, backing: &Path, state_dir: &Path) -> Result<Proc, LabError> {
    let mut args = rpcbind::join_args(anchor);
    args.extend([
        tools.nbdkit.display().to_string(),
        "-f".into(),
        "--log=stderr".into(),
        "-i".into(),
        ns.ns_addr.to_string(),
        "-p".into(),
        port.to_string(),
        "-e".into(),
        EXPORT.into(),
        "file".into(),
        backing.display().to_string(),
    ]);
    process::spawn(&tools.nsenter, &args, &state_dir.join("nbdkit.log")).map_err(LabError::System)
}

/// The target URL of the export.
pub fn url(ns: &Netns, port: u16) -> String {
    format!("nbd://{}:{port}/{EXPORT}", ns.ns_addr)
}

/// Ready when `qemu-img info` over NBD reports the backing file's size.
pub fn wait_ready(tools: &Tools, ns: &Netns, proc: &Proc, port: u16, size: u64) -> Result<(), LabError> {
    let url = url(ns, port);
    let want = format!("\"virtual-size\": {size}");
    ready::wait("nbdkit", proc, || {
        ready::tcp(ns.ns_addr, port)?;
        let out = process::run(&tools.qemu_img, &["info", "--output=json", &url])?;
        if out.contains(&want) { Ok(()) } else { Err(format!("qemu-img info {url}: size is not {size}")) }
    })
}
