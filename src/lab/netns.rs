//! The storage host's network: a network namespace `storlabN` joined to the
//! root namespace by a veth pair `stlNh` (root side, 10.99.N.1/24) and
//! `stlNs` (namespace side, 10.99.N.2/24, where every server listens).
//! A `loopback` lab's namespace has no veth pair, only its own `lo` (only
//! rpcbind runs in it, reached through its Unix socket): see [`create_with`].
//!
//! 10.99.0.0/16 is used only between the root namespace and namespaces the lab
//! itself created; slot N (0..=255) is the first one with no namespace, no
//! interface and no address of that name or range on the machine.

use crate::process;
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// A storage-host network namespace and its veth link.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Netns {
    /// Namespace name (`ip netns`), e.g. `storlab0`.
    pub name: String,
    /// Slot: the third octet of the addresses.
    pub slot: u8,
    /// Root-namespace end of the veth pair.
    pub host_if: String,
    /// Namespace end of the veth pair.
    pub ns_if: String,
    /// Address of the root-namespace end.
    pub host_addr: Ipv4Addr,
    /// Address of the namespace end: where the servers listen.
    pub ns_addr: Ipv4Addr,
    /// Whether the veth pair was made (false: a `loopback` lab's namespace,
    /// with only `lo`; the interface names and addresses above then name
    /// nothing). Labs recorded before this field all had one.
    #[serde(default = "made_before_loopback")]
    pub veth: bool,
}

/// The `veth` of a namespace recorded before namespaces without one.
fn made_before_loopback() -> bool {
    true
}

impl Netns {
    /// The names and addresses of slot `slot`.
    pub fn for_slot(slot: u8) -> Netns {
        Netns {
            name: format!("storlab{slot}"),
            slot,
            host_if: format!("stl{slot}h"),
            ns_if: format!("stl{slot}s"),
            host_addr: Ipv4Addr::new(10, 99, slot, 1),
            ns_addr: Ipv4Addr::new(10, 99, slot, 2),
            veth: true,
        }
    }

    /// The address processes inside the namespace are reached on from inside
    /// it: the namespace end of the veth pair, or 127.0.0.1 without one.
    pub fn inner_addr(&self) -> Ipv4Addr {
        if self.veth {
            self.ns_addr
        } else {
            Ipv4Addr::LOCALHOST
        }
    }

    /// The bind-mounted namespace file `ip netns` made.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// Whether any part of this slot exists on the machine.
    fn in_use(&self, addrs: &str) -> bool {
        self.path().exists()
            || !host_namespaces(self).is_empty()
            || Path::new("/sys/class/net").join(&self.host_if).exists()
            || addrs.contains(&format!(" 10.99.{}.", self.slot))
    }
}

/// Create the namespace and link in the first free slot.
pub fn create(ip: &Path) -> Result<Netns, String> {
    create_with(ip, true, |_| false, |_| Ok(()))
}

/// [`create`], calling `made` as soon as the namespace exists (to record it
/// before anything else can fail). Without `veth` the namespace gets no link
/// to the root namespace, only its `lo` (brought up); its slot is still
/// taken (the slot names the namespace). A slot for which `taken` says true
/// (say, an earlier lab's backing store is still there) is skipped.
pub fn create_with(
    ip: &Path,
    veth: bool,
    taken: impl Fn(u8) -> bool,
    mut made: impl FnMut(&Netns) -> Result<(), String>,
) -> Result<Netns, String> {
    let addrs = process::run(ip, &["-o", "-4", "addr", "show"]).unwrap_or_default();
    for slot in 0..=255u8 {
        let ns = Netns {
            veth,
            ..Netns::for_slot(slot)
        };
        if ns.in_use(&addrs) || taken(slot) {
            continue;
        }
        // A concurrent `lab up` may have taken it since: then try the next.
        if process::run(ip, &["netns", "add", &ns.name]).is_err() {
            continue;
        }
        return match made(&ns).and_then(|()| configure(ip, &ns)) {
            Ok(()) => Ok(ns),
            Err(e) => {
                let _ = destroy(ip, &ns);
                Err(e)
            }
        };
    }
    Err("no free storlabN network namespace slot (0..=255 all in use)".into())
}

/// Add the veth pair, addresses and routes (without a veth: bring `lo` up).
fn configure(ip: &Path, ns: &Netns) -> Result<(), String> {
    if !ns.veth {
        return process::run(ip, &["-n", &ns.name, "link", "set", "lo", "up"]).map(|_| ());
    }
    let host_cidr = format!("{}/24", ns.host_addr);
    let ns_cidr = format!("{}/24", ns.ns_addr);
    let steps: [&[&str]; 6] = [
        &[
            "link",
            "add",
            &ns.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &ns.ns_if,
            "netns",
            &ns.name,
        ],
        &["addr", "add", &host_cidr, "dev", &ns.host_if],
        &["link", "set", &ns.host_if, "up"],
        &["-n", &ns.name, "addr", "add", &ns_cidr, "dev", &ns.ns_if],
        &["-n", &ns.name, "link", "set", &ns.ns_if, "up"],
        &["-n", &ns.name, "link", "set", "lo", "up"],
    ];
    for args in steps {
        process::run(ip, args)?;
    }
    Ok(())
}

/// PIDs of every process inside the namespace (`ip netns pids`).
pub fn pids(ip: &Path, ns: &Netns) -> Vec<u32> {
    if !ns.path().exists() {
        return Vec::new();
    }
    process::run(ip, &["netns", "pids", &ns.name])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Remove the link and the namespace; what is already gone is fine.
pub fn destroy(ip: &Path, ns: &Netns) -> Result<(), String> {
    let mut errors = Vec::new();
    if ns.veth
        && Path::new("/sys/class/net").join(&ns.host_if).exists()
        && let Err(e) = process::run(ip, &["link", "del", &ns.host_if])
    {
        errors.push(e);
    }
    if ns.path().exists()
        && let Err(e) = process::run(ip, &["netns", "del", &ns.name])
    {
        errors.push(e);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The first of `ports` that cannot be bound on [`Netns::inner_addr`] inside the namespace.
pub fn first_port_in_use(ns: &Netns, ports: &[u16]) -> Result<Option<u16>, String> {
    let file = std::fs::File::open(ns.path())
        .map_err(|e| format!("cannot open {}: {e}", ns.path().display()))?;
    let addr = ns.inner_addr();
    let ports = ports.to_vec();
    // setns(2) on a thread of our own moves that thread only.
    std::thread::spawn(move || {
        // SAFETY: setns on a valid namespace fd, affecting this thread alone.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!(
                "cannot enter namespace: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(ports
            .into_iter()
            .find(|&p| TcpListener::bind((addr, p)).is_err()))
    })
    .join()
    .map_err(|_| "port check thread panicked".to_string())?
}

/// Host namespaces of storage host `ns` that exist on the machine, recorded or
/// not (a crash between `ip netns add` and the record).
pub fn host_namespaces(ns: &Netns) -> Vec<String> {
    let prefix = format!("{}-h", ns.name);
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut out: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix(&prefix)
                .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    out.sort();
    out
}
