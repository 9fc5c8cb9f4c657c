//! `storlab wire` from the outside: the table as text and JSON, and bad
//! filters refused with one line naming the option, value and allowed values.

use std::process::{Command, Output};
use storlab::linkmodel::{Dir, Link, Protocol, rate};

fn wire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .arg("wire")
        .args(args)
        .output()
        .expect("run storlab")
}

#[test]
fn default_table_lists_every_protocol_both_ways() {
    let o = wire(&[]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "read (data from target to initiator)",
        "write (data from initiator to target)",
        "iscsi",
        "nfs3",
        "nfs4.1",
        "nbd",
        "fcoe",
        "32gfc",
        "100gbe",
        "1 MiB",
    ] {
        assert!(out.contains(needle), "lacks {needle:?}:\n{out}");
    }
}

#[test]
fn the_lab_targets_capped_at_fc_and_fcoe_rows_are_named_with_them() {
    let o = wire(&[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "Lab targets capped at these rows' rates: fc1 (fc 1gfc), fc2 (fc 2gfc), fc4 (fc 4gfc), \
             fc8 (fc 8gfc), fc16 (fc 16gfc), fc32 (fc 32gfc), fcoe10 (fcoe 10gbe)."
        ),
        "{out}"
    );
    // Only those whose row is shown; none without one.
    let o = wire(&["--protocol", "fcoe", "--link", "10gbe", "--bs", "1m"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Lab targets capped at these rows' rates: fcoe10 (fcoe 10gbe).\n"),
        "{out}"
    );
    // The row is the model's FCoE rate on 10 GbE, the rate fcoe10 is held to.
    let want = rate(
        Protocol::Fcoe,
        &Link::named("10gbe").unwrap(),
        1500,
        1 << 20,
        Dir::Read,
    )
    .unwrap();
    assert!(out.contains(&format!("{:>9.1}", want / 1e6)), "{out}");
    let o = wire(&["--protocol", "nbd", "--link", "10gbe"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Lab targets"));
    let o = wire(&["--json", "--protocol", "fcoe", "--link", "10gbe,25gbe"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(
        doc["lab_targets"],
        serde_json::json!([{ "name": "fcoe10", "label": "FCoE 10Gb (block)", "protocol": "fcoe", "link": "10gbe" }])
    );
}

#[test]
fn json_carries_the_model_and_its_breakdown() {
    let o = wire(&[
        "--json",
        "--protocol",
        "nbd,fc",
        "--link",
        "1gbe,8gfc",
        "--mtu",
        "1500",
        "--bs",
        "64k",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let est = doc["estimates"].as_array().unwrap();
    assert_eq!(est.len(), 4, "nbd on 1gbe and fc on 8gfc, read and write");
    let nbd = &est[0];
    assert_eq!(
        (nbd["protocol"].as_str(), nbd["dir"].as_str()),
        (Some("nbd"), Some("read"))
    );
    let want = rate(
        Protocol::Nbd,
        &Link::named("1gbe").unwrap(),
        1500,
        65536,
        Dir::Read,
    )
    .unwrap();
    assert_eq!(nbd["payload_bytes_per_s"].as_f64().unwrap(), want);
    assert!(nbd["data"]["frames"].as_f64().unwrap() > 45.0);
    assert!(nbd["overhead_bytes_per_io"].as_f64().unwrap() > 4000.0);
    let fc = &est[2];
    assert_eq!(fc["link"], "8gfc");
    assert!(fc["mtu"].is_null(), "FC rows have no MTU: {fc}");
    assert_eq!(fc["data"]["frames"], 33.0);
    assert_eq!(doc["assumptions"]["iscsi"]["initiator_mrdsl"], 262144);
}

/// Exit 2 and one line on stderr holding every needle.
fn refused(args: &[&str], needles: &[&str]) {
    let o = wire(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: lacks {n:?}: {err}");
    }
}

#[test]
fn bad_filters_are_one_line_naming_the_option() {
    refused(
        &["--protocol", "iscsi,smb"],
        &["--protocol", "\"smb\"", "nfs4.1"],
    );
    refused(&["--link", "3gfc"], &["--link", "\"3gfc\"", "32gfc"]);
    refused(
        &["--mtu", "9000,70000"],
        &["--mtu", "\"70000\"", "576 to 65520"],
    );
    refused(&["--bs", "0"], &["--bs", "\"0\"", "64 MiB"]);
    refused(
        &["--protocol", "fc", "--link", "10gbe"],
        &["--protocol fc", "--link 10gbe"],
    );
}
