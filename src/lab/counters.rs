//! Network counters of the lab's links, read inside each namespace once per
//! interval: interface bytes, packets and drops (`/proc/net/dev`) and TCP
//! segments and retransmissions (`/proc/net/snmp`), beside the I/O.
//!
//! A `netns` lab has a client end (the root namespace's veth, or one veth per
//! load-generator host namespace) and a storage end (the storage namespace's
//! veth or bridge ports); each namespace is read from inside it by a thread
//! that joined it once (`setns`), through `/proc/thread-self/net`. A
//! `loopback` lab is read in the root namespace, on `lo`: its counters count
//! every packet once as sent and once as received, and include whatever else
//! this machine sends over loopback.

use super::LabState;
use super::net::NetMode;
use crate::model::{IfCounters, NetSample, TcpCounters};
use crate::runner::Probe;
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};

/// One namespace to read: its name (`None`: this process's own), its role
/// on the path and the interfaces that are the lab's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    /// `ip netns` name, or `None` for the namespace storlab runs in.
    pub netns: Option<String>,
    /// `client`, `storage` or `host N`.
    pub role: String,
    /// The lab's interfaces in it.
    pub interfaces: Vec<String>,
}

/// What a lab's links are, namespace by namespace.
pub fn watches(lab: &LabState) -> Vec<Watch> {
    let Some(ns) = lab.netns.as_ref().filter(|_| lab.net == NetMode::Netns) else {
        return vec![Watch {
            netns: None,
            role: "client+storage".into(),
            interfaces: vec!["lo".into()],
        }];
    };
    let mut out = vec![Watch {
        netns: None,
        role: "client".into(),
        interfaces: vec![ns.host_if.clone()],
    }];
    let mut storage = vec![ns.ns_if.clone()];
    for h in &lab.hosts {
        out.push(Watch {
            netns: Some(h.name.clone()),
            role: format!("host {}", h.index),
            interfaces: vec![h.host_if.clone()],
        });
        storage.push(h.port_if.clone());
    }
    out.push(Watch {
        netns: Some(ns.name.clone()),
        role: "storage".into(),
        interfaces: storage,
    });
    out
}

/// A raw reading of one namespace: cumulative counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Interface name → counters.
    pub interfaces: BTreeMap<String, IfCounters>,
    /// TCP counters.
    pub tcp: TcpCounters,
}

/// Parse `/proc/net/dev`: interface → cumulative counters.
pub fn parse_dev(text: &str) -> BTreeMap<String, IfCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 12 {
            continue;
        }
        let name = name.trim().to_string();
        out.insert(
            name.clone(),
            IfCounters {
                name,
                rx_bytes: v[0],
                rx_packets: v[1],
                tx_bytes: v[8],
                tx_packets: v[9],
                dropped: v[3] + v[11],
            },
        );
    }
    out
}

/// Parse the `Tcp:` lines of `/proc/net/snmp` (a header line of names, then
/// one of values).
pub fn parse_snmp(text: &str) -> TcpCounters {
    let mut lines = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return TcpCounters::default();
    };
    let get = |want: &str| {
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(n, _)| *n == want)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    TcpCounters {
        in_segs: get("InSegs"),
        out_segs: get("OutSegs"),
        retrans_segs: get("RetransSegs"),
    }
}

/// Read this thread's network namespace.
fn read_here(interfaces: &[String]) -> Reading {
    let dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap_or_default();
    let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
    let mut all = parse_dev(&dev);
    Reading {
        interfaces: interfaces
            .iter()
            .filter_map(|i| all.remove(i).map(|c| (i.clone(), c)))
            .collect(),
        tcp: parse_snmp(&snmp),
    }
}

/// What `after` moved since `before`.
pub fn delta(before: &Reading, after: &Reading) -> (Vec<IfCounters>, TcpCounters) {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let ifs = after
        .interfaces
        .values()
        .map(|a| {
            let b = before.interfaces.get(&a.name).cloned().unwrap_or_default();
            IfCounters {
                name: a.name.clone(),
                rx_bytes: d(a.rx_bytes, b.rx_bytes),
                rx_packets: d(a.rx_packets, b.rx_packets),
                tx_bytes: d(a.tx_bytes, b.tx_bytes),
                tx_packets: d(a.tx_packets, b.tx_packets),
                dropped: d(a.dropped, b.dropped),
            }
        })
        .collect();
    let tcp = TcpCounters {
        in_segs: d(after.tcp.in_segs, before.tcp.in_segs),
        out_segs: d(after.tcp.out_segs, before.tcp.out_segs),
        retrans_segs: d(after.tcp.retrans_segs, before.tcp.retrans_segs),
    };
    (ifs, tcp)
}

/// A thread inside one namespace that reads it on request.
struct Reader {
    watch: Watch,
    ask: Sender<Sender<Reading>>,
    last: Mutex<Reading>,
}

impl Reader {
    /// Start a reader for `watch`; `None` when its namespace cannot be joined
    /// (it was removed: the lab is going down).
    fn start(watch: Watch) -> Option<Reader> {
        let (ask, asked) = mpsc::channel::<Sender<Reading>>();
        let (ready_tx, ready_rx) = mpsc::channel::<bool>();
        let ns = watch.netns.clone();
        let interfaces = watch.interfaces.clone();
        std::thread::Builder::new()
            .name("storlab-netcount".into())
            .spawn(move || {
                let joined = ns.as_deref().is_none_or(|n| join_netns(n).is_ok());
                let _ = ready_tx.send(joined);
                if joined {
                    serve(&interfaces, asked);
                }
            })
            .ok()?;
        if !ready_rx.recv().unwrap_or(false) {
            return None;
        }
        Some(Reader {
            watch,
            ask,
            last: Mutex::new(Reading::default()),
        })
    }

    fn read(&self) -> Option<Reading> {
        let (tx, rx) = mpsc::channel();
        self.ask.send(tx).ok()?;
        rx.recv().ok()
    }
}

/// Answer reading requests until the probe is dropped.
fn serve(interfaces: &[String], asked: Receiver<Sender<Reading>>) {
    for reply in asked {
        let _ = reply.send(read_here(interfaces));
    }
}

/// Move this thread into the network namespace `ip netns` calls `name`.
fn join_netns(name: &str) -> std::io::Result<()> {
    let f = std::fs::File::open(format!("/run/netns/{name}"))?;
    // SAFETY: setns takes a descriptor we own for the whole call and changes
    // only this thread's network namespace; it touches no memory of ours.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The lab's link counters as the runner's per-interval probe.
pub struct NetProbe {
    readers: Vec<Reader>,
}

impl NetProbe {
    /// A probe over every namespace of `lab` that can be joined now.
    pub fn for_lab(lab: &LabState) -> NetProbe {
        NetProbe {
            readers: watches(lab).into_iter().filter_map(Reader::start).collect(),
        }
    }
}

impl Probe for NetProbe {
    fn start(&self) {
        for r in &self.readers {
            if let Some(now) = r.read() {
                *r.last.lock().unwrap_or_else(|e| e.into_inner()) = now;
            }
        }
    }

    fn sample(&self) -> Vec<NetSample> {
        let mut out = Vec::new();
        for r in &self.readers {
            let Some(now) = r.read() else { continue };
            let mut last = r.last.lock().unwrap_or_else(|e| e.into_inner());
            let (interfaces, tcp) = delta(&last, &now);
            *last = now;
            out.push(NetSample {
                namespace: r.watch.netns.clone().unwrap_or_else(|| "root".into()),
                role: r.watch.role.clone(),
                interfaces,
                tcp,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000 10    0    1    0     0          0         0 2000 20    0    2    0     0       0          0
 stl3h: 5 1 0 0 0 0 0 0 7 2 0 0 0 0 0 0
";
    const SNMP: &str = "Ip: Forwarding DefaultTTL
Ip: 2 64
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 2173 1004 569 324 0 19689463 21595954 5350 0 792 0
Udp: InDatagrams
Udp: 5
";

    #[test]
    fn proc_net_dev_and_snmp_parse() {
        let d = parse_dev(DEV);
        let lo = &d["lo"];
        assert_eq!(
            (lo.rx_bytes, lo.rx_packets, lo.tx_bytes, lo.tx_packets),
            (1000, 10, 2000, 20)
        );
        assert_eq!(lo.dropped, 3);
        assert_eq!(d["stl3h"].tx_bytes, 7);
        let t = parse_snmp(SNMP);
        assert_eq!(
            (t.in_segs, t.out_segs, t.retrans_segs),
            (19689463, 21595954, 5350)
        );
        assert_eq!(parse_snmp("Ip: x\nIp: 1\n"), TcpCounters::default());
    }

    #[test]
    fn a_delta_is_what_moved_and_never_negative() {
        let before = Reading {
            interfaces: parse_dev(DEV),
            tcp: parse_snmp(SNMP),
        };
        let mut after = before.clone();
        after.interfaces.get_mut("lo").unwrap().tx_bytes += 500;
        after.tcp.retrans_segs += 3;
        // A counter that went backwards (an interface re-made) counts as 0.
        after.interfaces.get_mut("stl3h").unwrap().rx_bytes = 0;
        let (ifs, tcp) = delta(&before, &after);
        let lo = ifs.iter().find(|i| i.name == "lo").unwrap();
        assert_eq!((lo.tx_bytes, lo.rx_bytes), (500, 0));
        assert_eq!(ifs.iter().find(|i| i.name == "stl3h").unwrap().rx_bytes, 0);
        assert_eq!((tcp.retrans_segs, tcp.in_segs), (3, 0));
    }

    #[test]
    fn this_namespace_reads_and_counts_loopback_traffic() {
        // A probe on the root namespace's `lo` sees bytes we send over it.
        let r = Reader::start(Watch {
            netns: None,
            role: "t".into(),
            interfaces: vec!["lo".into()],
        })
        .expect("the own namespace is always readable");
        let before = r.read().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            use std::io::Read;
            let (mut s, _) = l.accept().unwrap();
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).unwrap();
            buf.len()
        });
        {
            use std::io::Write;
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(&vec![7u8; 1 << 20]).unwrap();
        }
        assert_eq!(t.join().unwrap(), 1 << 20);
        let after = r.read().unwrap();
        let (ifs, tcp) = delta(&before, &after);
        let lo = &ifs[0];
        assert!(lo.tx_bytes >= 1 << 20, "{lo:?}");
        assert!(lo.tx_packets > 0 && tcp.out_segs > 0, "{lo:?} {tcp:?}");
    }
}
