//! What bound a load point is named from what was measured, and it is real:
//! the same 64 KiB random reads over NFSv3 on a lab whose store is in RAM
//! and reached over loopback (nothing slower than this machine's two CPUs)
//! are flagged machine-bound, and on a lab whose store is one emulated
//! 7.2k-rpm disk they are named medium-bound, not machine-bound; behind a
//! shaped 100 Mbit/s link, link-bound. Needs root and ./setup.sh's packages.

mod support;

use serde_json::Value;
use support::{TempDir, storlab, text};

/// The same workload on every lab: 64 KiB random reads, 8 workers of 32
/// outstanding I/Os (on the RAM lab, 4 KiB reads or fewer workers leave
/// this VM's CPUs 80-90% busy, idle between the hand-offs of client, ganesha
/// and media server), 4 s measured.
const WORKLOAD: [&str; 14] = [
    "--rw",
    "randread",
    "--bs",
    "64k",
    "--numjobs",
    "8",
    "--iodepth",
    "32",
    "--size",
    "64m",
    "--ramp_time",
    "1",
    "--runtime",
    "4",
];

/// `compare --lab` on `media` (with the preset file `file`, if any) over
/// nfs3, the workload above; its one point's `bound` and the printed tables.
fn bound_on(dir: &TempDir, media: &str, file: Option<&std::path::Path>) -> (Value, String) {
    bound_over(dir, media, file, None)
}

/// [`bound_on`], the servers behind the shaped `link` if one is given.
fn bound_over(
    dir: &TempDir,
    media: &str,
    file: Option<&std::path::Path>,
    link: Option<&str>,
) -> (Value, String) {
    let json = dir.join(&format!("{media}-{}.json", link.unwrap_or("lo")));
    let mut cmd = storlab();
    cmd.args(["compare", "--lab", "--media", media, "--targets", "nfs3"]);
    if let Some(f) = file {
        cmd.arg("--media-file").arg(f);
    }
    if let Some(l) = link {
        cmd.args(["--link", l]);
    }
    cmd.args(WORKLOAD)
        .args(["--no-db", "-q", "--json"])
        .arg(&json);
    let o = support::lab::run_with_temporary_lab(cmd, "compare");
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = &doc["jobs"][0]["points"][0];
    (
        p["bound"].clone(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn a_fast_lab_is_machine_bound_and_a_slow_medium_is_media_bound() {
    support::assert_root("the lab needs root");
    let dir = TempDir::new("bound", "media");

    let (fast, out) = bound_on(&dir, "ram", None);
    assert_eq!(fast["machine"], true, "RAM over loopback: {fast}\n{out}");
    assert!(
        out.contains("!"),
        "a machine-bound figure is marked in the table\n{out}"
    );
    let host = fast["shares"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["limit"] == "machine")
        .and_then(|s| s["share"].as_f64())
        .unwrap();
    assert!(
        host >= storlab::model::MACHINE_BUSY,
        "the host's CPUs {host:.2} busy\n{fast}"
    );

    let file = dir.join("slow.toml");
    std::fs::write(
        &file,
        "[slow-disk]\ndescription = \"one 7.2k disk, nothing cached\"\nkind = \"spindle\"\n\
         devices = 1\nstripe_kb = 64\nseek_ms = 8\nrpm = 7200\ntransfer_mb_s = 100\n\
         cache_us = 50\nread_cache_mb = 0\nwrite_cache_mb = 0\nnvram = false\n",
    )
    .unwrap();
    let (slow, out) = bound_on(&dir, "slow-disk", Some(&file));
    assert_eq!(slow["by"], "medium", "one slow disk: {slow}\n{out}");
    assert_eq!(slow["machine"], false, "one slow disk: {slow}\n{out}");
    assert!(
        slow["detail"]
            .as_str()
            .unwrap()
            .contains("slow-disk's devices"),
        "{slow}"
    );
    assert!(
        out.contains("medium slow-disk"),
        "the table names the medium\n{out}"
    );

    // The RAM store again, its servers behind a 100 Mbit/s link
    // (`compare --lab --link`): the link is what bound it, and the table
    // names the link.
    let (narrow, out) = bound_over(&dir, "ram", None, Some("100mbit"));
    assert_eq!(
        narrow["by"], "link",
        "RAM behind 100 Mbit/s: {narrow}\n{out}"
    );
    assert!(
        out.contains("link 100mbit"),
        "the table names the link\n{out}"
    );
}
