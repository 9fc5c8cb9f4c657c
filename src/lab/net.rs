//! Where the lab's servers listen (`lab up --net loopback|netns`).
//!
//! - `loopback` (the default without `--hosts`, `--link` or `--mtu`): ganesha,
//!   tgtd and nbdkit listen on 127.0.0.1 of the root network namespace. They
//!   join only the mount namespace of the anchor (rpcbind, see
//!   [`super::rpcbind`]), so /run stays private; rpcbind alone runs in the
//!   lab's network namespace, and ganesha registers with it through its Unix
//!   socket /run/rpcbind.sock in that shared /run.
//! - `netns`: every server runs in the storage host's network namespace and
//!   listens on its address (10.99.N.2); needed for `--hosts`, `--link`,
//!   `--mtu` and for cutting the link.

use super::netns::Netns;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};

/// How the lab's servers are reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetMode {
    /// 127.0.0.1 of the root network namespace; no link, nothing shaped.
    Loopback,
    /// The storage host's network namespace, reached over a veth link.
    Netns,
}

impl NetMode {
    /// Every mode's name, for error messages.
    pub const ALLOWED: &'static str = "loopback, netns";

    /// `loopback` or `netns`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetMode::Loopback => "loopback",
            NetMode::Netns => "netns",
        }
    }

    /// Parse `loopback` or `netns`.
    pub fn parse(text: &str) -> Result<NetMode, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "loopback" => Ok(NetMode::Loopback),
            "netns" => Ok(NetMode::Netns),
            _ => Err(format!(
                "invalid --net {text:?} (allowed: {})",
                NetMode::ALLOWED
            )),
        }
    }

    /// The mode of a lab recorded before modes were: every server in the namespace.
    pub fn recorded_before_modes() -> NetMode {
        NetMode::Netns
    }
}

impl fmt::Display for NetMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where ganesha, tgtd and nbdkit run and listen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listen {
    /// The lab's mode.
    pub net: NetMode,
    /// The address they listen on: 127.0.0.1, or the storage host's address.
    pub addr: Ipv4Addr,
}

impl Listen {
    /// Where the servers of a lab in mode `net` on `ns` listen.
    pub fn of(net: NetMode, ns: &Netns) -> Listen {
        Listen {
            net,
            addr: match net {
                NetMode::Loopback => Ipv4Addr::LOCALHOST,
                NetMode::Netns => ns.ns_addr,
            },
        }
    }
}

/// The first of `ports` (with its server's name) that cannot be bound on
/// 127.0.0.1 in this (the root) network namespace, and what holds it.
pub fn loopback_port_in_use(ports: &[(u16, &str)]) -> Option<(u16, String, String)> {
    ports.iter().find_map(|&(port, server)| {
        TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .err()
            .map(|e| (port, server.to_string(), holder(port, &e)))
    })
}

/// The first of `ports` (with its server's name) that cannot be bound for
/// UDP on 127.0.0.1 in this (the root) network namespace, and what holds it
/// (ganesha also serves NFS and MOUNT over UDP).
pub fn loopback_udp_port_in_use(ports: &[(u16, &str)]) -> Option<(u16, String, String)> {
    ports.iter().find_map(|&(port, server)| {
        UdpSocket::bind((Ipv4Addr::LOCALHOST, port))
            .err()
            .map(|e| (port, server.to_string(), udp_holder(port, &e)))
    })
}

/// What listens on TCP `port` (any address) in this network namespace: the
/// process and address from /proc, else the bind error.
fn holder(port: u16, bind_error: &std::io::Error) -> String {
    describe(&listeners(port), "listens on", "", port, bind_error)
}

/// What holds UDP `port` (any address) in this network namespace.
fn udp_holder(port: u16, bind_error: &std::io::Error) -> String {
    describe(&udp_sockets(port), "holds", "UDP ", port, bind_error)
}

/// The first of `sockets` with its process, else the bind error.
fn describe(
    sockets: &[(String, u64)],
    verb: &str,
    proto: &str,
    port: u16,
    bind_error: &std::io::Error,
) -> String {
    let Some((addr, inode)) = sockets.first() else {
        return format!("cannot bind {proto}127.0.0.1:{port}: {bind_error}");
    };
    match socket_owner(*inode) {
        Some((pid, comm)) => format!("pid {pid} ({comm}) {verb} {proto}{addr}"),
        None => format!("a socket {verb} {proto}{addr}"),
    }
}

/// (local address, socket inode) of every TCP socket listening on `port`
/// (/proc/net/tcp and tcp6 of this network namespace).
pub fn listeners(port: u16) -> Vec<(String, u64)> {
    proc_sockets("tcp", port, Some("0A"))
}

/// (local address, socket inode) of every UDP socket bound to `port`
/// (/proc/net/udp and udp6 of this network namespace).
pub fn udp_sockets(port: u16) -> Vec<(String, u64)> {
    proc_sockets("udp", port, None)
}

/// Sockets of /proc/net/PROTO and PROTO6 on local `port`, in socket state
/// `state` (hex, as /proc shows it) when given.
fn proc_sockets(proto: &str, port: u16, state: Option<&str>) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (file, v6) in [
        (format!("/proc/net/{proto}"), false),
        (format!("/proc/net/{proto}6"), true),
    ] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st ... uid timeout inode
            if f.len() < 10 || state.is_some_and(|st| f[3] != st) {
                continue;
            }
            let Some((hex_addr, hex_port)) = f[1].split_once(':') else {
                continue;
            };
            if u16::from_str_radix(hex_port, 16).ok() != Some(port) {
                continue;
            }
            let Ok(inode) = f[9].parse::<u64>() else {
                continue;
            };
            out.push((format!("{}:{port}", proc_addr(hex_addr, v6)), inode));
        }
    }
    out
}

/// A /proc/net/tcp{,6} address (hex, 32-bit words in host order) as text;
/// an IPv4-mapped IPv6 address is shown as its IPv4 address.
pub fn proc_addr(hex: &str, v6: bool) -> String {
    let words: Vec<u32> = (0..hex.len() / 8)
        .filter_map(|i| u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16).ok())
        .collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    if !v6 && bytes.len() == 4 {
        return Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string();
    }
    let Ok(b16) = <[u8; 16]>::try_from(bytes.as_slice()) else {
        return hex.to_string();
    };
    let a = std::net::Ipv6Addr::from(b16);
    match a.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => format!("[{a}]"),
    }
}

/// The process (PID, command name) holding socket `inode`, if this process may see it.
fn socket_owner(inode: u64) -> Option<(u32, String)> {
    let want = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str()) {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                return Some((pid, comm.trim().to_string()));
            }
        }
    }
    None
}

/// A process's mount namespace, held open. The kernel gives a freed
/// namespace's inode number to the next one made, so a number read from
/// /proc names one namespace only while something holds it: with it held,
/// [`MountNs::pids`] cannot find the processes of a namespace made since
/// (another lab's, started while this one goes down).
pub struct MountNs {
    /// Keeps the namespace (and so its inode number) alive.
    _held: std::fs::File,
    id: (u64, u64),
}

/// Device and inode of `pid`'s mount namespace.
fn mount_ns_id(pid: u32) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(format!("/proc/{pid}/ns/mnt")).ok()?;
    Some((m.dev(), m.ino()))
}

impl MountNs {
    /// The mount namespace `pid` is in now, held open.
    pub fn of(pid: u32) -> Option<MountNs> {
        use std::os::unix::fs::MetadataExt;
        let held = std::fs::File::open(format!("/proc/{pid}/ns/mnt")).ok()?;
        let m = held.metadata().ok()?;
        Some(MountNs {
            id: (m.dev(), m.ino()),
            _held: held,
        })
    }

    /// Whether `other` is the same namespace.
    pub fn same_as(&self, other: &MountNs) -> bool {
        self.id == other.id
    }

    /// Every process in this namespace.
    pub fn pids(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
            .filter(|&pid| mount_ns_id(pid) == Some(self.id))
            .collect()
    }
}

/// The MTU of the root namespace's loopback interface.
pub fn loopback_mtu() -> u32 {
    std::fs::read_to_string("/sys/class/net/lo/mtu")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65536)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes_and_names_the_allowed_values() {
        assert_eq!(NetMode::parse("loopback"), Ok(NetMode::Loopback));
        assert_eq!(NetMode::parse("NetNS"), Ok(NetMode::Netns));
        let e = NetMode::parse("bridge").unwrap_err();
        assert!(e.contains("--net") && e.contains("loopback, netns"), "{e}");
    }

    #[test]
    fn proc_net_addresses() {
        // 127.0.0.1 as /proc/net/tcp prints it on little-endian machines.
        let lo = u32::from_ne_bytes([127, 0, 0, 1]);
        assert_eq!(proc_addr(&format!("{lo:08X}"), false), "127.0.0.1");
        let mapped = format!(
            "{:08X}{:08X}{:08X}{lo:08X}",
            0,
            0,
            u32::from_ne_bytes([0, 0, 0xff, 0xff])
        );
        assert_eq!(proc_addr(&mapped, true), "127.0.0.1");
        assert_eq!(proc_addr(&format!("{:032X}", 0), true), "[::]");
    }

    /// `sleep` in a mount namespace of its own, once it has entered it.
    fn sleeper_in_own_mount_ns() -> std::process::Child {
        let child = std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sleep", "30"])
            .spawn()
            .expect("unshare (util-linux)");
        let own = mount_ns_id(std::process::id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while mount_ns_id(child.id()) == own {
            assert!(std::time::Instant::now() < deadline, "unshare never ran");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child
    }

    #[test]
    fn a_held_mount_namespace_never_names_one_made_after_it_ended() {
        let mut first = sleeper_in_own_mount_ns();
        let held = MountNs::of(first.id()).unwrap();
        assert_eq!(held.pids(), vec![first.id()]);
        first.kill().unwrap();
        first.wait().unwrap();
        // The kernel hands a freed namespace number out again at once; while
        // `held` keeps the first namespace, the second gets another.
        let mut second = sleeper_in_own_mount_ns();
        let pids = held.pids();
        let second_id = mount_ns_id(second.id());
        second.kill().unwrap();
        second.wait().unwrap();
        assert_eq!(
            pids,
            Vec::<u32>::new(),
            "found the later namespace's process"
        );
        assert_ne!(second_id, Some(held.id));
    }

    #[test]
    fn a_listening_loopback_port_is_found_with_its_holder() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let found = loopback_port_in_use(&[(port, "nbdkit (NBD)")]);
        assert_held_by_us(found, port, "nbdkit (NBD)", &format!("127.0.0.1:{port}"));
        drop(l);
        let free = eventually(|| loopback_port_in_use(&[(port, "nbdkit (NBD)")]).is_none());
        assert!(free, "port {port} still reported in use after closing it");
    }

    /// `found` names `port`, `server`, and this process as the holder at `addr`.
    fn assert_held_by_us(
        found: Option<(u16, String, String)>,
        port: u16,
        server: &str,
        addr: &str,
    ) {
        let (p, named, by) = found.unwrap();
        assert_eq!((p, named.as_str()), (port, server));
        assert!(
            by.contains(&format!("pid {}", std::process::id())) && by.contains(addr),
            "{by}"
        );
    }

    /// Whether `f` holds within 2 s: a port closed by a test is free again,
    /// though other tests of this process, which bind ephemeral ports too,
    /// may briefly get the same one.
    fn eventually(f: impl Fn() -> bool) -> bool {
        (0..40).any(|_| {
            let ok = f();
            if !ok {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            ok
        })
    }

    #[test]
    fn a_bound_udp_loopback_port_is_found_with_its_holder() {
        let u = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = u.local_addr().unwrap().port();
        let found = loopback_udp_port_in_use(&[(port, "ganesha (NFS)")]);
        assert_held_by_us(
            found,
            port,
            "ganesha (NFS)",
            &format!("UDP 127.0.0.1:{port}"),
        );
        assert!(
            udp_sockets(port)
                .iter()
                .any(|(a, _)| a == &format!("127.0.0.1:{port}"))
        );
        drop(u);
        let free = eventually(|| loopback_udp_port_in_use(&[(port, "ganesha (NFS)")]).is_none());
        assert!(
            free,
            "UDP port {port} still reported in use after closing it"
        );
    }
}
