//! `storlab wire`'s table: which rows (filters as the user typed them), and
//! the table as text or JSON. No I/O here: the CLI prints what this returns.

use super::{Dir, Estimate, Link, ModelError, Protocol, estimate, ethernet, fc, protocol};
use crate::workload::units::{format_size, parse_size};
use serde_json::json;

/// Default I/O sizes: the studies' small random I/Os and large streams.
pub const DEFAULT_SIZES: [u64; 4] = [4096, 8192, 65536, 1 << 20];
/// Default MTUs: standard and jumbo frames.
pub const DEFAULT_MTUS: [u32; 2] = [1500, 9000];
/// Largest I/O size the table takes.
pub const MAX_IO: u64 = 64 << 20;

/// What to tabulate.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Protocols, in table order.
    pub protocols: Vec<Protocol>,
    /// Links.
    pub links: Vec<Link>,
    /// MTUs of the IP protocols' rows (FC and FCoE rows have their own frames).
    pub mtus: Vec<u32>,
    /// I/O sizes in bytes.
    pub sizes: Vec<u64>,
}

impl Default for Filter {
    /// Every protocol but NBD with structured replies, every link, both MTUs,
    /// [`DEFAULT_SIZES`].
    fn default() -> Filter {
        Filter {
            protocols: Protocol::ALL
                .into_iter()
                .filter(|p| *p != Protocol::NbdStructured)
                .collect(),
            links: Link::catalogue(),
            mtus: DEFAULT_MTUS.to_vec(),
            sizes: DEFAULT_SIZES.to_vec(),
        }
    }
}

/// Split a comma list given to `--opt`, parsing each item; an empty or bad
/// item is one line naming the option, the item and what is allowed.
fn list<T>(
    opt: &str,
    text: &str,
    allowed: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, String> {
    text.split(',')
        .map(|item| {
            parse(item.trim())
                .ok_or_else(|| format!("invalid --{opt} \"{}\" (allowed: {allowed})", item.trim()))
        })
        .collect()
}

impl Filter {
    /// The filter the user typed: each option a comma list, `None` for the
    /// default. Errors name the option, the value and the allowed values.
    pub fn parse(
        protocols: Option<&str>,
        links: Option<&str>,
        mtus: Option<&str>,
        sizes: Option<&str>,
    ) -> Result<Filter, String> {
        let mut f = Filter::default();
        if let Some(t) = protocols {
            f.protocols = list("protocol", t, &Protocol::allowed(), Protocol::parse)?;
        }
        if let Some(t) = links {
            f.links = list("link", t, &Link::allowed(), |s| Link::named(s).ok())?;
        }
        if let Some(t) = mtus {
            let allowed = format!(
                "MTUs in bytes from {} to {}, e.g. 1500,9000",
                ethernet::MIN_MTU,
                ethernet::MAX_MTU
            );
            f.mtus = list("mtu", t, &allowed, |s| {
                s.parse::<u32>()
                    .ok()
                    .filter(|m| (ethernet::MIN_MTU..=ethernet::MAX_MTU).contains(m))
            })?;
        }
        if let Some(t) = sizes {
            let allowed = "sizes from 1 byte to 64 MiB, fio-style, e.g. 4k,64k,1m";
            f.sizes = list("bs", t, allowed, |s| {
                parse_size(s).ok().filter(|b| (1..=MAX_IO).contains(b))
            })?;
        }
        Ok(f)
    }

    /// Every (protocol, link, MTU) row the filter selects, each with its
    /// estimates for every size, reads then writes. An empty selection (the
    /// protocols run on none of the links) is an error saying why.
    pub fn rows(&self) -> Result<Vec<Row>, String> {
        let mut rows = Vec::new();
        for &p in &self.protocols {
            for link in self.links.iter().filter(|l| p.runs_on(l)) {
                let mtus: Vec<Option<u32>> = if p.over_ip() {
                    self.mtus.iter().map(|&m| Some(m)).collect()
                } else {
                    vec![None]
                };
                for mtu in mtus {
                    rows.push(Row::new(p, link, mtu, &self.sizes).map_err(|e| e.to_string())?);
                }
            }
        }
        if rows.is_empty() {
            let ps: Vec<&str> = self.protocols.iter().map(|p| p.as_str()).collect();
            let ls: Vec<&str> = self.links.iter().map(|l| l.name.as_str()).collect();
            return Err(format!(
                "no row: --protocol {} runs on none of --link {} (IP protocols run on Ethernet \
                 (1gbe..100gbe), fc on 1gfc..32gfc, fcoe on 10gbe..100gbe)",
                ps.join(","),
                ls.join(",")
            ));
        }
        Ok(rows)
    }
}

/// One protocol on one link at one MTU, across the sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Estimates of reads, one per size.
    pub read: Vec<Estimate>,
    /// Estimates of writes, one per size.
    pub write: Vec<Estimate>,
}

impl Row {
    fn new(p: Protocol, link: &Link, mtu: Option<u32>, sizes: &[u64]) -> Result<Row, ModelError> {
        let m = mtu.unwrap_or(0);
        let at = |dir| -> Result<Vec<Estimate>, ModelError> {
            sizes
                .iter()
                .map(|&s| estimate(p, link, m, s, dir))
                .collect()
        };
        Ok(Row {
            read: at(Dir::Read)?,
            write: at(Dir::Write)?,
        })
    }
}

/// The table as text: one block per direction, a row per protocol, link and
/// MTU, a column per size with MB/s (10^6 bytes) and % of the line rate.
pub fn text(rows: &[Row], sizes: &[u64]) -> String {
    let mut out = String::from(
        "storlab wire: user data a link carries with back-to-back I/Os\n\
         MB/s = 10^6 bytes/s of user data; % of the link's line rate after its code\n\
         (Ethernet, IPv4, TCP with timestamps and ACKs, PDU and RPC headers, FC frames and idles:\n\
         docs/wire-model.md; frames and overhead per I/O: storlab wire --json)\n",
    );
    let head: String = sizes
        .iter()
        .map(|&s| format!("{:>15}", format_size(s)))
        .collect();
    for (dir, what) in [
        (Dir::Read, "data from target to initiator"),
        (Dir::Write, "data from initiator to target"),
    ] {
        out.push_str(&format!(
            "\n{} ({what})\n{:<15} {:<7} {:>5} {:>10}{head}\n",
            dir.as_str(),
            "protocol",
            "link",
            "mtu",
            "line MB/s"
        ));
        for r in rows {
            let cells = if dir == Dir::Read { &r.read } else { &r.write };
            let first = &cells[0];
            let mtu = first.mtu.map_or("-".to_string(), |m| m.to_string());
            out.push_str(&format!(
                "{:<15} {:<7} {:>5} {:>10.1}",
                first.protocol.as_str(),
                first.link,
                mtu,
                first.line_bytes_per_s / 1e6
            ));
            for e in cells {
                out.push_str(&format!(
                    "{:>9.1} {:>4.1}%",
                    e.payload_bytes_per_s / 1e6,
                    100.0 * e.efficiency()
                ));
            }
            out.push('\n');
        }
    }
    out.push_str(
        "\nmtu -: FC carries 2048 data bytes per frame; FCoE the same in 2136-byte Ethernet frames (baby jumbo).\n\
         iSCSI keys: libiscsi 1.19 with tgt 1.0.85 (Data-In 256 KiB, Data-Out 8 KiB, immediate 8 KiB, InitialR2T=Yes).\n",
    );
    out
}

/// The assumptions behind every row, for the JSON.
pub fn assumptions() -> serde_json::Value {
    json!({
        "ethernet": {
            "per_frame_bytes": ethernet::PREAMBLE_SFD + ethernet::MAC_HEADER + ethernet::FCS + ethernet::IFG,
            "ipv4_header": ethernet::IPV4_HEADER,
            "tcp_header_with_timestamps": ethernet::TCP_HEADER + ethernet::TCP_TIMESTAMPS,
            "segments_per_ack": ethernet::SEGMENTS_PER_ACK,
            "data_direction": "backlogged: messages packed into full segments",
            "control_direction": "each message in its own segment(s), carrying ACKs",
        },
        "iscsi": protocol::IscsiParams::LAB,
        "nfs": {
            "auth": "AUTH_SYS, machinename \"storlab\", no auxiliary gids",
            "file_handle_bytes": protocol::FILE_HANDLE,
            "max_io": protocol::NFS_MAX_IO,
            "v3_replies": "post-op attributes on READ, wcc_data on WRITE",
            "v4_compound": "PUTFH + READ/WRITE; v4.1 adds SEQUENCE",
        },
        "nbd": { "max_io": protocol::NBD_MAX_IO },
        "fc": {
            "data_per_frame": fc::DATA_PER_FRAME,
            "frame_overhead": fc::SOF + fc::FRAME_HEADER + fc::CRC + fc::EOF,
            "idle_words_between_frames": fc::MIN_IDLE_WORDS,
            "xfer_rdy_per_write": 1,
        },
        "fcoe": { "frame_overhead": fc::fcoe_frame_bytes(0), "vlan_tagged": true },
    })
}

/// The table as JSON: the assumptions and one object per estimate.
pub fn json(rows: &[Row]) -> serde_json::Value {
    let estimates: Vec<serde_json::Value> = rows
        .iter()
        .flat_map(|r| r.read.iter().chain(&r.write))
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap_or_default();
            v["efficiency"] = json!(e.efficiency());
            v["overhead_bytes_per_io"] = json!(e.overhead_bytes());
            v["iops"] = json!(e.iops());
            v
        })
        .collect();
    json!({
        "model": "storlab wire-efficiency model (docs/wire-model.md)",
        "units": { "rates": "bytes per second", "sizes": "bytes", "per_io": "frames and line bytes per I/O" },
        "assumptions": assumptions(),
        "estimates": estimates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_table_has_every_row() {
        let rows = Filter::default().rows().unwrap();
        // 5 IP protocols x 5 Ethernet links x 2 MTUs, FC on 6 links, FCoE on 4.
        assert_eq!(rows.len(), 5 * 5 * 2 + 6 + 4);
        assert!(rows.iter().all(|r| r.read.len() == 4 && r.write.len() == 4));
        let t = text(&rows, &DEFAULT_SIZES);
        assert!(t.contains("64 KiB") && t.contains("nfs4.1") && t.contains("32gfc"));
        let j = json(&rows);
        assert_eq!(j["estimates"].as_array().unwrap().len(), 60 * 8);
        assert_eq!(j["assumptions"]["iscsi"]["target_mrdsl"], 8192);
    }

    #[test]
    fn filters_parse_comma_lists() {
        let f = Filter::parse(
            Some("nbd, fc"),
            Some("1gbe,4gfc"),
            Some("9000"),
            Some("64k"),
        )
        .unwrap();
        let rows = f.rows().unwrap();
        assert_eq!(rows.len(), 2, "nbd on 1gbe at 9000, fc on 4gfc");
        assert_eq!(rows[0].read[0].mtu, Some(9000));
        assert_eq!(rows[1].read[0].mtu, None);
        assert_eq!(rows[1].read[0].io_size, 65536);
        let j = json(&rows);
        let e = &j["estimates"][0];
        assert_eq!(e["protocol"], "nbd");
        assert_eq!(e["dir"], "read");
        assert!(e["data"]["frames"].as_f64().unwrap() > 7.0);
    }

    #[test]
    fn bad_filters_name_the_option_value_and_allowed() {
        let e = Filter::parse(Some("iscsi,smb"), None, None, None).unwrap_err();
        assert!(
            e.starts_with("invalid --protocol \"smb\" (allowed: iscsi"),
            "{e}"
        );
        let e = Filter::parse(None, Some("3gbe"), None, None).unwrap_err();
        assert!(e.contains("--link \"3gbe\"") && e.contains("100gbe"), "{e}");
        let e = Filter::parse(None, None, Some("1500,100"), None).unwrap_err();
        assert!(
            e.contains("--mtu \"100\"") && e.contains("576 to 65520"),
            "{e}"
        );
        let e = Filter::parse(None, None, None, Some("4k,,8k")).unwrap_err();
        assert!(e.contains("--bs \"\""), "{e}");
        let e = Filter::parse(None, None, None, Some("1g")).unwrap_err();
        assert!(e.contains("--bs \"1g\"") && e.contains("64 MiB"), "{e}");
        let e = Filter::parse(Some("fc"), Some("10gbe"), None, None)
            .unwrap()
            .rows()
            .unwrap_err();
        assert!(e.starts_with("no row: --protocol fc"), "{e}");
    }
}
