//! The model against hand-computed figures, its own invariants, and the
//! reference studies' published measurements (../shared/seeds 001 and 003).

use super::*;

fn link(name: &str) -> Link {
    Link::named(name).unwrap()
}

fn mb_s(p: Protocol, l: &str, mtu: u32, io: u64, dir: Dir) -> f64 {
    rate(p, &link(l), mtu, io, dir).unwrap() / 1e6
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn hand_computed_rates() {
    // NBD, 64 KiB reads, 1 GbE, MTU 1500: 65552 bytes of stream per I/O in
    // segments of 1448 bytes, each 1538 bytes of line time.
    let want = 65536.0 * 125e6 / (65552.0 / 1448.0 * 1538.0);
    assert!(close(
        rate(Protocol::Nbd, &link("1gbe"), 1500, 65536, Dir::Read).unwrap(),
        want
    ));
    // FC, 64 KiB writes, 4GFC: FCP_CMND (92 line bytes) and 32 data frames
    // of 2108 to the target; XFER_RDY and FCP_RSP come back.
    let want = 65536.0 * 425e6 / (92.0 + 32.0 * 2108.0);
    assert!(close(
        rate(Protocol::Fc, &link("4gfc"), 0, 65536, Dir::Write).unwrap(),
        want
    ));
    // FCoE, 64 KiB reads, 10 GbE: 32 frames of 2136 and an FCP_RSP of 112.
    let want = 65536.0 * 1.25e9 / (32.0 * 2136.0 + 112.0);
    assert!(close(
        rate(Protocol::Fcoe, &link("10gbe"), 1500, 65536, Dir::Read).unwrap(),
        want
    ));
}

#[test]
fn rates_stay_under_the_line_and_grow_with_the_io_size() {
    for p in Protocol::ALL {
        for l in Link::catalogue().iter().filter(|l| p.runs_on(l)) {
            for mtu in [1500, 9000] {
                for dir in [Dir::Read, Dir::Write] {
                    let mut last = 0.0;
                    for io in [512, 4096, 8192, 65536, 1 << 20, 16 << 20] {
                        let e = estimate(p, l, mtu, io, dir).unwrap();
                        let what = format!("{p} {} {mtu} {io} {dir:?}", l.name);
                        assert!(e.efficiency() > 0.0 && e.efficiency() < 1.0, "{what}");
                        // Larger I/Os amortize their headers (within 0.1%:
                        // a size that fills frames exactly can beat the next).
                        assert!(e.payload_bytes_per_s > last * 0.999, "{what}");
                        last = e.payload_bytes_per_s;
                    }
                }
            }
        }
    }
}

#[test]
fn jumbo_frames_help_ip_and_leave_fc_alone() {
    for p in [Protocol::Iscsi, Protocol::Nfs3, Protocol::Nbd] {
        let std = mb_s(p, "10gbe", 1500, 65536, Dir::Read);
        let jumbo = mb_s(p, "10gbe", 9000, 65536, Dir::Read);
        // 1448/1538 against 8948/9038 of the line: about 5% more.
        assert!(
            jumbo / std > 1.04 && jumbo / std < 1.06,
            "{p}: {std} {jumbo}"
        );
    }
    assert_eq!(
        mb_s(Protocol::Fcoe, "10gbe", 1500, 65536, Dir::Read),
        mb_s(Protocol::Fcoe, "10gbe", 9000, 65536, Dir::Read)
    );
}

#[test]
fn headers_rank_the_protocols_at_small_sizes() {
    // 4 KiB reads, by reply header: NBD's 16 bytes < iSCSI's 48-byte BHS <
    // NFSv4.0's 64 < NFSv4.1's 108 (SEQUENCE) < NFSv3's 132 (post-op
    // attributes); NBD's structured chunk is 28.
    let at = |p| mb_s(p, "10gbe", 1500, 4096, Dir::Read);
    assert!(at(Protocol::Nbd) > at(Protocol::Iscsi));
    assert!(at(Protocol::Iscsi) > at(Protocol::Nfs4));
    assert!(at(Protocol::Nfs4) > at(Protocol::Nfs41));
    assert!(at(Protocol::Nfs41) > at(Protocol::Nfs3));
    assert!(at(Protocol::Nbd) > at(Protocol::NbdStructured));
}

#[test]
fn errors_name_what_is_wrong() {
    let e = estimate(Protocol::Fc, &link("10gbe"), 1500, 4096, Dir::Read).unwrap_err();
    assert!(e.to_string().starts_with("fc does not run on 10gbe"), "{e}");
    let e = estimate(Protocol::Iscsi, &link("8gfc"), 1500, 4096, Dir::Read).unwrap_err();
    assert!(matches!(e, ModelError::NotCarried { .. }));
    assert!(estimate(Protocol::Fcoe, &link("1gbe"), 1500, 4096, Dir::Read).is_err());
    let e = estimate(Protocol::Nbd, &link("1gbe"), 100, 4096, Dir::Read).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MTU 100 out of range (allowed: 576 to 65520 bytes)"
    );
    assert_eq!(
        estimate(Protocol::Nbd, &link("1gbe"), 1500, 0, Dir::Read),
        Err(ModelError::IoSize)
    );
}

// Study 001 (openBench Labs, 8 Gb FC SAN for a VMware host): eight VMs read
// with block sizes growing over fixed intervals until the link saturated;
// through the 8 Gb HBA the total "converged on theoretical wire-speed—about
// 800MBps", through the 4 Gb HBA it "was limited to 400MBps" (read from the
// switch's port monitor). Those are round figures ("about"), so the model
// must land within 5% of them for large reads: a model that forgot 8b/10b
// (+25% over the study) or the frames' delimiters, headers and idles (+6%)
// fails; the idles alone (1%) are below what round figures can check, which
// `hand_computed_rates` does. MB in the study are decimal (an 8GFC port's
// "800MBps" is its 8.5 GBd over 10, less framing).
#[test]
fn study_001_fc_large_read_plateaus() {
    for (l, study) in [("4gfc", 400.0), ("8gfc", 800.0)] {
        for io in [65536, 256 << 10, 1 << 20] {
            let m = mb_s(Protocol::Fc, l, 0, io, Dir::Read);
            assert!(
                (m - study).abs() / study <= 0.05,
                "{l} {io}: model {m:.1} MB/s, study about {study}"
            );
        }
    }
}

// Study 001 again: one VM did "more than 60,000 IOPS" of 8 KB reads through
// the 8 Gb HBA, "more than 500MBps", "25% greater than the maximum level
// sustainable by a single FC port on a 4Gbps HBA". At 8 KiB the model must
// allow it on 8GFC and forbid it on 4GFC.
#[test]
fn study_001_one_vm_8k_reads_need_8gfc() {
    let measured = 60_000.0 * 8192.0 / 1e6;
    assert!(measured <= mb_s(Protocol::Fc, "8gfc", 0, 8192, Dir::Read));
    assert!(measured > mb_s(Protocol::Fc, "4gfc", 0, 8192, Dir::Read));
}

// Study 003 (Chelsio, BLADE, NetApp, 10 GbE iSCSI and NFS vs 4 Gb FC with
// Oracle DSS, table 2): peak storage throughput 8.95 Gb/s with NFS and 7.21
// Gb/s with iSCSI on 10 GbE; "in each case, the peak results were close to
// the theoretical throughput maximum"; iSCSI ran at 100% host CPU (software
// initiator, no TOE), which the study blames for its lower figure. Sequential
// direct reads of the database; RHEL 4's NFS client moved at most 32 KiB per
// READ, so the check spans 32 KiB to 1 MiB; no jumbo frames are mentioned,
// so MTU 1500. A measured peak cannot exceed what the wire carries, and the
// NFS peak must be within 10% of it (a peak sample of the controllers'
// counters, three hosts; 10% leaves room for their sampling and is still far
// tighter than a model off by a whole header layer).
#[test]
fn study_003_10gbe_peaks() {
    for io in [32768, 65536, 1 << 20] {
        let nfs = mb_s(Protocol::Nfs3, "10gbe", 1500, io, Dir::Read) * 8.0 / 1e3;
        let iscsi = mb_s(Protocol::Iscsi, "10gbe", 1500, io, Dir::Read) * 8.0 / 1e3;
        assert!(
            8.95 <= nfs && 8.95 >= 0.90 * nfs,
            "{io}: NFS model {nfs:.2} Gb/s"
        );
        assert!(7.21 <= iscsi, "{io}: iSCSI model {iscsi:.2} Gb/s");
        // On the wire the two differ by well under 1%: the 19% between them
        // in the study is not the wire's.
        assert!((iscsi - nfs).abs() / nfs < 0.01, "{io}: {iscsi} {nfs}");
    }
}

// Study 003's 4 Gb FC peak, 3.36 Gb/s, is above the model's payload rate
// (3.30 Gb/s): it is exactly the rate of FC frame bytes (SOF to EOF, idles
// excluded) on a saturated 4GFC link, so the study's counters counted frames,
// not user data. Its 10 GbE figures are then also at most frame bytes, and
// the payload model above is a fair upper bound for them only because they
// sit well below it.
#[test]
fn study_003_fc_peak_counts_frame_bytes() {
    let l = link("4gfc");
    let frame = fc::fc_frame_bytes(fc::DATA_PER_FRAME) as f64;
    let idle = (fc::MIN_IDLE_WORDS * fc::WORD) as f64;
    let frame_gbit = l.line_bytes_per_s() * (frame - idle) / frame * 8.0 / 1e9;
    assert!((frame_gbit - 3.36).abs() / 3.36 < 0.005, "{frame_gbit}");
    let payload_gbit = mb_s(Protocol::Fc, "4gfc", 0, 1 << 20, Dir::Read) * 8.0 / 1e3;
    assert!(payload_gbit < 3.36, "{payload_gbit}");
}
