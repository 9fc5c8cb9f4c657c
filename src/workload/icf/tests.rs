use super::*;
use crate::workload::catalogue::Catalogue;
use crate::workload::testing::{assert_has, assert_starts, import_errors};
use crate::workload::{BlockSizes, Profile, jobfile};
use std::time::Duration;

fn example() -> Imported {
    load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/iometer/study-004.icf"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A small .icf: `specs` is the ACCESS SPECIFICATIONS body, `workers` the
/// MANAGER LIST's workers.
fn icf(specs: &str, workers: &str) -> String {
    format!(
        "Version 1.1.0 \n'TEST SETUP ====\n'Test Description\n\tt\n'Run Time\n'\thours minutes seconds\n\t0 0 30\n\
         'Ramp Up Time (s)\n\t5\n'Test Type\n\tNORMAL\n'END test setup\n'ACCESS SPECIFICATIONS ====\n{specs}\
         'END access specifications\n'MANAGER LIST ====\n'Manager ID, manager name\n\t1,m\n{workers}'End manager\n'END manager list\n"
    )
}

fn worker(oio: u32, targets: u32, specs: &[&str]) -> String {
    let mut w = format!(
        "'Worker\n\tWorker\n'Worker type\n\tDISK\n'Number of outstanding IOs,test connection rate,transactions per connection\n\t{oio},DISABLED,1\n\
         'Disk maximum size,starting sector\n\t2048,8\n'Assigned access specs\n"
    );
    for s in specs {
        w.push_str(&format!("\t{s}\n"));
    }
    w.push_str("'End assigned access specs\n'Target assignments\n");
    for t in 0..targets {
        w.push_str(&format!(
            "'Target\n\t{t}: \"disk\"\n'Target type\n\tDISK\n'End target\n"
        ));
    }
    w.push_str("'End target assignments\n'End worker\n");
    w
}

const SPECS: &str = "'Access specification name,default assignment\n\tmix,NONE\n\
     'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,60,70,100,0,1,0,0\n\t65536,40,70,100,0,1,0,0\n\
     'Access specification name,default assignment\n\tseq,ALL\n'size,% of size,% reads,% random,delay,burst,align,reply\n\t1048576,100,0,0,0,1,1048576,0\n";

fn errors(text: &str) -> Vec<String> {
    import_errors(parse(text, "dir/x.icf"))
}

#[test]
fn study_004_round_trips_to_the_catalogue() {
    let imp = example();
    let cat = Catalogue::builtin()
        .get("iometer-17", Profile::Full)
        .unwrap();
    assert_eq!(imp.job.points.len(), 17);
    assert_eq!(cat.points.len(), 17);
    for (p, q) in imp.job.points.iter().zip(&cat.points) {
        assert_eq!(p.label, q.label);
        let (a, b) = (&p.groups[0].access, &q.groups[0].access);
        assert_eq!(
            (&a.bs, a.read_pct, a.random_pct),
            (&b.bs, b.read_pct, b.random_pct),
            "{}",
            p.label
        );
        assert_eq!((p.size, p.ramp, p.runtime), (q.size, q.ramp, q.runtime));
        assert_eq!(a.iodepth, b.iodepth);
    }
    // convert's TOML reads back to the same job.
    let text = imp.to_toml();
    assert_eq!(
        jobfile::parse(&text, "study-004.toml").unwrap(),
        imp.job,
        "{text}"
    );
}

#[test]
fn workers_targets_mixes_and_steps() {
    let text = icf(
        SPECS,
        &(worker(4, 2, &["mix", "seq"]) + &worker(4, 2, &["mix", "seq"]) + &worker(1, 1, &["seq"])),
    );
    let imp = parse(&text, "dir/x.icf").unwrap_or_else(|e| panic!("{e}"));
    let pts = &imp.job.points;
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0].label, "mix + seq");
    assert_eq!(pts[1].label, "seq");
    let p = &pts[0];
    assert_eq!((p.size, p.offset), (2048 * 512, 8 * 512));
    assert_eq!(
        (p.ramp, p.runtime, p.direct),
        (Duration::from_secs(5), Duration::from_secs(30), true)
    );
    let g = &p.groups[0];
    // Two identical workers: one group of 2 VMs, 2 disks each, 4 OIO per target.
    assert_eq!((g.vms, g.disks_per_vm, g.access.iodepth), (2, 2, 8));
    assert_eq!(g.access.bs, BlockSizes(vec![(4096, 60), (65536, 40)]));
    assert_eq!(
        (g.access.read_pct, g.access.random_pct, g.access.align),
        (70, 100, Some(512))
    );
    assert_eq!((p.groups[1].vms, p.groups[1].access.iodepth), (1, 1));
    assert_eq!(p.groups[1].access.align, Some(1 << 20));
    // The third worker has no second spec: the second step runs the first class alone.
    assert_eq!(pts[1].groups.len(), 1);
    assert_eq!(pts[1].groups[0].vms, 2);
    assert_eq!(jobfile::parse(&imp.to_toml(), "x.toml").unwrap(), imp.job);
}

#[test]
fn a_transfer_delay_and_burst_become_a_think_time() {
    let specs = "'Access specification name,default assignment\n\tbursty,NONE\n\
         'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,100,0,0,10,8,0,0\n";
    let imp = parse(&icf(specs, &worker(1, 1, &["bursty"])), "dir/x.icf").unwrap();
    let a = &imp.job.points[0].groups[0].access;
    assert_eq!(
        a.think,
        Some(crate::workload::Think {
            blocks: 8,
            time: std::time::Duration::from_millis(10),
            spin: std::time::Duration::ZERO,
        })
    );
    assert_eq!(jobfile::parse(&imp.to_toml(), "x.toml").unwrap(), imp.job);
}

#[test]
fn what_storlab_cannot_run_is_refused_one_line_each() {
    let specs = "'Access specification name,default assignment\n\tburst,NONE\n\
         'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,100,0,0,70000,1,0,0\n\
         'Access specification name,default assignment\n\tmixed,NONE\n\
         'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,50,0,0,0,1,0,0\n\t8192,50,100,0,0,1,0,0\n";
    let text = icf(specs, &worker(1, 1, &["burst", "nope"])).replace("NORMAL", "CYCLE_TARGETS");
    let e = errors(&text);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert_starts(
        &e[0],
        "dir/x.icf, line 11: invalid Test Type = CYCLE_TARGETS",
    );
    assert_starts(&e[1], "dir/x.icf, line 17: invalid delay = 70000");
    let text = icf(specs, &worker(1, 1, &["burst", "nope"]));
    let e = errors(&text);
    // Reading stops at what it cannot read; the mapping's errors come once it reads.
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_starts(
        &e[0],
        "dir/x.icf, line 17: invalid delay = 70000 (allowed: 0..=60000 ms",
    );
    let e = errors(&icf(
        "'Access specification name,default assignment\n\tmixed,NONE\n\
         'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,50,0,0,0,1,0,0\n\t8192,50,100,0,0,1,0,0\n",
        &worker(1, 1, &["mixed", "nope"]),
    ));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert_has(
        &e[0],
        "unknown access specification \"nope\" (allowed: mixed)",
    );
    assert_has(&e[1], "invalid access specification line = 100% reads");
    // A network worker as Iometer saves it: its type and its keys are
    // refused as Iometer's, not as unknown keys.
    let e = errors(&icf(
        SPECS,
        &worker(1, 1, &["seq"])
            .replace("'Worker type\n\tDISK", "'Worker type\n\tNETWORK,TCP")
            .replace("'Assigned", "'Local network interface\n\teth0\n'Assigned"),
    ));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert_has(&e[0], "invalid Worker type = NETWORK,TCP");
    assert_has(
        &e[1],
        "Iometer key \"Local network interface\" is not supported by storlab (a network \
         worker's setting",
    );
    // Reopening the target every N transactions changes what is measured.
    let e = errors(&icf(
        SPECS,
        &worker(4, 1, &["seq"]).replace("\t4,DISABLED,1", "\t4,ENABLED,100"),
    ));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_has(
        &e[0],
        "Iometer setting \"test connection rate\" is not supported by storlab (Iometer then \
         reopens",
    );
    let e = errors(&icf(
        SPECS,
        &worker(1, 1, &["seq"]).replace("'Assigned", "'Odd key\n\t1\n'Assigned"),
    ));
    assert!(e[0].contains("unknown Iometer key \"Odd key\""), "{e:?}");
    assert!(e.iter().all(|l| l.starts_with("dir/x.icf, line ")), "{e:?}");
}
