use super::*;
use crate::workload::testing::{assert_has, assert_starts, example_files, import_errors};
use crate::workload::{BlockSizes, DiskLayout, Rate, SyncMode, jobfile};
use std::time::Duration;

fn job(text: &str) -> Imported {
    parse(text, "dir/x.fio").unwrap_or_else(|e| panic!("{e}"))
}

fn errors(text: &str) -> Vec<String> {
    import_errors(parse(text, "dir/x.fio"))
}

/// `convert`'s text read back as a storlab job file gives the same job.
fn round_trips(imp: &Imported) {
    let text = imp.to_toml();
    let back = jobfile::parse(&text, "converted.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, imp.job, "{text}");
}

#[test]
fn examples_load_and_round_trip() {
    let files = example_files("fio", "fio");
    for path in &files {
        let imp = load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        round_trips(&imp);
    }
    assert!(files.len() >= 3);
}

#[test]
fn one_job_with_globals() {
    let imp = job(
        "[global]\nioengine=libaio\ndirect=1\nsize=1g\nfilename=/dev/sdx\nruntime=60\ntime_based\nramp_time=5\n\
         [oltp]\nrw=randrw\nrwmixread=70\nbs=8k\niodepth=32\nnumjobs=4\nrate_iops=500\nsync=dsync\n",
    );
    assert_eq!(imp.targets, ["file:/dev/sdx"]);
    assert_eq!(imp.job.name, "x");
    let p = &imp.job.points[0];
    assert_eq!(p.label, "oltp");
    assert_eq!((p.size, p.direct, p.sync), (1 << 30, true, SyncMode::Dsync));
    assert_eq!(
        (p.runtime, p.ramp),
        (Duration::from_secs(60), Duration::from_secs(5))
    );
    assert_eq!((p.io_limit, p.disk_layout), (None, DiskLayout::Shared));
    let g = &p.groups[0];
    assert_eq!((g.name.as_str(), g.vms, g.workers_per_vm), ("oltp", 1, 4));
    let a = &g.access;
    assert_eq!((a.read_pct, a.random_pct, a.iodepth), (70, 100, 32));
    assert_eq!(
        (a.bs.clone(), a.rate),
        (BlockSizes::one(8192), Some(Rate::Iops(500)))
    );
    round_trips(&imp);
}

#[test]
fn batch_completion_is_read_under_both_names_and_round_trips() {
    for key in ["iodepth_batch_complete_min", "iodepth_batch_complete"] {
        let imp = job(&format!(
            "[d]\nioengine=io_uring\nfilename=/dev/sdx\nrw=randread\niodepth=32\n{key}=8\nsize=1g\n"
        ));
        let a = &imp.job.points[0].groups[0].access;
        assert_eq!((a.iodepth, a.batch_complete_min), (32, 8), "{key}");
        round_trips(&imp);
    }
    let imp = job("[d]\nioengine=io_uring\nfilename=/dev/sdx\niodepth=32\nsize=1g\n");
    assert_eq!(imp.job.points[0].groups[0].access.batch_complete_min, 1);
    // A sync engine has one I/O in flight: the batch goes with the depth.
    let imp = job("[d]\nfilename=/dev/sdx\niodepth=32\niodepth_batch_complete=8\nsize=1g\n");
    let a = &imp.job.points[0].groups[0].access;
    assert_eq!((a.iodepth, a.batch_complete_min), (1, 1));
}

#[test]
fn batch_submission_is_read_under_both_names_and_round_trips() {
    for key in ["iodepth_batch_submit", "iodepth_batch"] {
        let imp = job(&format!(
            "[d]\nioengine=io_uring\nfilename=/dev/sdx\niodepth=32\n{key}=8\nsize=1g\n"
        ));
        assert_eq!(imp.job.points[0].groups[0].access.submit_batch, 8, "{key}");
        round_trips(&imp);
    }
    // Unset: the backend's choice.
    let imp = job("[d]\nioengine=io_uring\nfilename=/dev/sdx\niodepth=32\nsize=1g\n");
    assert_eq!(imp.job.points[0].groups[0].access.submit_batch, 0);
    // fio's 0 (the whole iodepth) is asked for as the number; above iodepth
    // is out of range.
    let e =
        errors("[d]\nioengine=io_uring\nfilename=/dev/sdx\niodepth=32\niodepth_batch=0\nsize=1g\n");
    assert_starts(&e[0], "dir/x.fio, line 5: invalid iodepth_batch = 0");
    assert_has(&e[0], "give that number");
    let e = errors(
        "[d]\nioengine=io_uring\nfilename=/dev/sdx\niodepth=4\niodepth_batch_submit=8\nsize=1g\n",
    );
    assert_has(&e[0], "invalid iodepth_batch_submit = 8 (allowed: 1..=4)");
}

#[test]
fn sqthread_poll_and_hipri_map_and_round_trip() {
    let imp = job(
        "[d]\nioengine=io_uring\nfilename=/dev/sdx\ndirect=1\nsqthread_poll=1\n\
         sqthread_poll_cpu=1\nhipri\nsize=1g\n",
    );
    let p = &imp.job.points[0];
    assert_eq!((p.sqpoll, p.sqpoll_cpu, p.hipri), (true, Some(1), true));
    round_trips(&imp);
    let imp = job("[d]\nioengine=io_uring\nfilename=/dev/sdx\nsize=1g\n");
    let p = &imp.job.points[0];
    assert_eq!((p.sqpoll, p.sqpoll_cpu, p.hipri), (false, None, false));
    // fio's pvsync2 takes hipri too (RWF_HIPRI): storlab's psync, which runs
    // pvsync2, does not poll, and says so.
    let e = errors("[d]\nioengine=pvsync2\nfilename=/dev/sdx\ndirect=1\nhipri=1\nsize=1g\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_starts(
        &e[0],
        "dir/x.fio, line 5: invalid hipri = (set with ioengine=pvsync2)",
    );
    assert_has(&e[0], "its psync engine, which runs pvsync2, does not");
}

#[test]
fn registered_files_and_buffers_are_what_storlab_does_and_cannot_be_turned_off() {
    let plain = job("[d]\nioengine=io_uring\nfilename=/dev/sdx\nsize=1g\n");
    let imp =
        job("[d]\nioengine=io_uring\nfilename=/dev/sdx\nfixedbufs\nregisterfiles=1\nsize=1g\n");
    assert_eq!(imp.job, plain.job);
    let e = errors("[d]\nioengine=io_uring\nfilename=/dev/sdx\nfixedbufs=0\nsize=1g\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_starts(&e[0], "dir/x.fio, line 4: invalid fixedbufs = 0");
    assert_has(&e[0], "always registers its files and buffers");
}

#[test]
fn polling_options_of_another_engine_are_named() {
    let e = errors("[d]\nioengine=libaio\nfilename=/dev/sdx\nsqthread_poll=1\nhipri=1\nsize=1g\n");
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(
        e[0],
        "dir/x.fio, line 4: invalid sqthread_poll = (set with ioengine=libaio) \
         (allowed: ioengine=io_uring only (fio's engine option))"
    );
    assert_starts(
        &e[1],
        "dir/x.fio, line 5: invalid hipri = (set with ioengine=libaio)",
    );
    assert_has(&e[1], "ioengine=io_uring only (storlab polls with io_uring");
    // hipri without direct is refused by name, as in a job file.
    let e = errors("[d]\nioengine=io_uring\nfilename=/dev/sdx\nhipri=1\nsize=1g\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_has(&e[0], "invalid hipri = 1");
    assert_has(&e[0], "need O_DIRECT");
    let e = errors("[d]\nioengine=io_uring\nfilename=/dev/sdx\nsqthread_poll=yes\nsize=1g\n");
    assert_starts(&e[0], "dir/x.fio, line 4: invalid sqthread_poll = yes");
}

#[test]
fn stonewalls_make_points_and_jobs_beside_share_one() {
    let imp =
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fio/stonewalls.fio")).unwrap();
    let labels: Vec<&str> = imp.job.points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["seq-write", "seq-read", "oltp + logger"]);
    assert_eq!(imp.targets, ["file:/var/tmp/storlab-fio"]);
    let p = &imp.job.points[2];
    assert_eq!(p.groups.len(), 2);
    // A directory gives each clone its own file: a VM each.
    assert_eq!((p.groups[0].vms, p.groups[0].workers_per_vm), (4, 1));
    assert_eq!(p.groups[0].access.bs, BlockSizes::one(8192));
    assert_eq!(p.groups[1].access.bs, BlockSizes::one(4096));
    assert_eq!(p.groups[1].access.rate, Some(Rate::Iops(200)));
    assert_eq!(p.disk_layout, DiskLayout::Slice);
    assert_eq!(imp.job.points[1].groups[0].access.read_pct, 100);
    assert_eq!(
        imp.job.points[0].groups[0].access.bs,
        BlockSizes::one(65536)
    );
}

#[test]
fn without_time_based_each_job_moves_its_size() {
    let p = &job("[a]\nioengine=null\nsize=16m\nrw=write\n").job.points[0];
    assert_eq!((p.io_limit, p.runtime), (Some(16 << 20), Duration::ZERO));
    let p = &job("[a]\nioengine=null\nsize=16m\nio_size=4m\nruntime=3\n")
        .job
        .points[0];
    assert_eq!(
        (p.io_limit, p.runtime),
        (Some(4 << 20), Duration::from_secs(3))
    );
}

#[test]
fn engines_map_to_targets() {
    let t = |extra: &str| job(&format!("[a]\nsize=1m\n{extra}\n")).targets;
    assert_eq!(t("ioengine=null"), ["null:"]);
    assert_eq!(t("ioengine=libaio"), ["file:."]);
    assert_eq!(t("directory=/d\nfilename=f"), ["file:/d/f"]);
    assert_eq!(
        t("ioengine=nbd\nuri=nbd://127.0.0.1:10809/e"),
        ["nbd://127.0.0.1:10809/e"]
    );
    assert_eq!(
        t("ioengine=libiscsi\nfilename=iscsi://h/iqn.x/0"),
        ["iscsi://h/iqn.x/0"]
    );
    // A buffered file job: fio would drop the page cache first; storlab says it does not.
    let cached = |extra: &str| {
        job(&format!("[a]\nsize=1m\n{extra}\n"))
            .notes
            .iter()
            .any(|n| n.contains("invalidate=1"))
    };
    assert!(cached("ioengine=libaio"));
    assert!(!cached("ioengine=libaio\ndirect=1"));
    assert!(!cached("ioengine=libaio\ninvalidate=0"));
    assert!(!cached("ioengine=null"));
    // A sync engine keeps one I/O in flight, as fio does, and says so.
    let imp = job("[a]\nsize=1m\nioengine=psync\niodepth=8\n");
    assert_eq!(imp.job.points[0].groups[0].access.iodepth, 1);
    assert!(
        imp.notes.iter().any(|n| n.contains("psync")),
        "{:?}",
        imp.notes
    );
}

/// fio's sync engines, and a job without ioengine (fio's default, psync),
/// run on storlab's psync engine, which `convert` writes; the async ones on
/// io_uring; the others name their target and no engine.
#[test]
fn sync_engines_map_to_psync_and_async_ones_to_io_uring() {
    use crate::workload::IoEngine;
    let engine = |extra: &str| {
        let imp = job(&format!("[a]\nsize=1m\nfilename=/dev/sdx\n{extra}\n"));
        round_trips(&imp);
        (imp.job.points[0].ioengine, imp.to_toml())
    };
    for e in ["psync", "sync", "pvsync", "pvsync2", "vsync"] {
        let (got, text) = engine(&format!("ioengine={e}"));
        assert_eq!(got, IoEngine::Psync, "{e}");
        assert!(text.contains("ioengine = \"psync\""), "{e}: {text}");
    }
    assert_eq!(engine("").0, IoEngine::Psync);
    for e in ["libaio", "io_uring", "posixaio"] {
        assert_eq!(engine(&format!("ioengine={e}")).0, IoEngine::IoUring, "{e}");
    }
    let (got, text) = engine("ioengine=null");
    assert_eq!(got, IoEngine::IoUring);
    assert!(!text.contains("ioengine"), "{text}");
    // Jobs that run together run on one engine.
    let e = errors("[a]\nsize=1m\nfilename=/x\n[b]\nioengine=libaio\nsize=1m\nfilename=/x\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_starts(&e[0], "dir/x.fio, line 5: invalid ioengine = io_uring");
    assert_has(&e[0], "the same as job [a] beside it (psync)");
}

#[test]
fn bsrange_lists_the_sizes_fio_draws() {
    let g = &job("[a]\nioengine=null\nsize=1m\nbsrange=4k-16k\n")
        .job
        .points[0]
        .groups[0];
    assert_eq!(
        g.access.bs,
        BlockSizes(vec![(4096, 1), (8192, 1), (12288, 1), (16384, 1)])
    );
}

#[test]
fn every_unsupported_option_is_one_line_naming_file_line_and_option() {
    let e = errors(
        "[global]\nioengine=libaio\nsize=1m\nverify=crc32c\n[a]\nrw=randtrim\nbs=4k,8k\nfsync=4\n\
         random_distribution=zipf:0\n[b]\nioengine=rbd\n",
    );
    assert_eq!(e.len(), 6, "{e:#?}");
    // verify is fio's: refused saying why, not as a typo.
    assert_starts(
        &e[0],
        "dir/x.fio, line 4: fio option \"verify\" is not supported by storlab (fio's data \
         verification; storlab checks data its own way: --verify",
    );
    assert_starts(
        &e[1],
        "dir/x.fio, line 6: invalid rw = randtrim (allowed: read, write",
    );
    assert_starts(&e[2], "dir/x.fio, line 7: invalid bs = 4k,8k");
    assert_starts(&e[3], "dir/x.fio, line 8: invalid fsync = 4");
    assert_starts(
        &e[4],
        "dir/x.fio, line 9: invalid random_distribution = zipf:0 (allowed: zipf's theta is > 0",
    );
    // [b] inherits verify from [global]: said once; then [b]'s engine.
    assert_starts(
        &e[5],
        "dir/x.fio, line 11: invalid ioengine = rbd (allowed: psync",
    );
    assert!(e.iter().all(|l| !l.contains('\n')));
}

#[test]
fn fio_options_storlab_refuses_say_why_and_other_names_are_unknown() {
    let e = errors(
        "[global]\nioengine=io_uring\nsize=1m\n[a]\niodepth=32\niodepth_batch_complete_max=8\n\
         iodepth_low=4\nverfy=md5\nthinktime_iotime=10\n",
    );
    assert_eq!(e.len(), 4, "{e:#?}");
    for (line, option) in [(6, "iodepth_batch_complete_max"), (7, "iodepth_low")] {
        assert_starts(
            &e[line - 6],
            &format!(
                "dir/x.fio, line {line}: fio option \"{option}\" is not supported by storlab \
                 (it changes how the queue is filled, and so what is measured; storlab keeps \
                 iodepth requests in flight"
            ),
        );
    }
    // Not a fio option at all: a typo, with the options storlab reads.
    assert_eq!(
        e[2],
        format!(
            "dir/x.fio, line 8: unknown fio option \"verfy\" (allowed: {})",
            options::SUPPORTED
        )
    );
    assert_starts(
        &e[3],
        "dir/x.fio, line 9: fio option \"thinktime_iotime\" is not supported by storlab (it \
         changes when I/Os are issued",
    );
    assert!(e.iter().all(|l| !l.contains('\n')));
}

#[test]
fn every_refused_fio_option_is_refused_saying_why_and_no_reader_takes_it() {
    let mut n = 0;
    for name in refused::names() {
        let e = errors(&format!("[a]\nioengine=null\nsize=1m\n{name}=1\n"));
        let line =
            format!("dir/x.fio, line 4: fio option \"{name}\" is not supported by storlab (");
        assert!(e.len() == 1 && e[0].starts_with(&line), "{name}: {e:?}");
        assert!(
            !options::SUPPORTED
                .split([',', ' ', '(', ')'])
                .any(|w| w == name),
            "{name} is both read and refused"
        );
        n += 1;
    }
    assert!(n > 200, "{n}");
}

#[test]
fn bad_values_and_missing_keys_are_named() {
    let e = errors("[a]\nioengine=null\nsize=4q\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_starts(&e[0], "dir/x.fio, line 3: invalid size = 4q");
    let e = errors("[a]\nioengine=null\n");
    assert_starts(&e[0], "dir/x.fio, line 1 (job [a]): invalid size = (none)");
    let e = errors("[a]\nioengine=null\nsize=1m\ntime_based\n");
    assert_has(&e[0], "invalid runtime = (none)");
    let e = errors("[global]\nbs=3q\n");
    assert!(
        e.iter().any(|l| l.contains("at least one [JOB] section")) || e[0].contains("line 2"),
        "{e:?}"
    );
    // Whole-job validation names the file too.
    let e = errors("[a]\nioengine=null\nsize=4k\nbs=8k\n");
    assert_starts(&e[0], "fio job file dir/x.fio (as a storlab job)");
}

#[test]
fn jobs_beside_each_other_agree_on_the_point() {
    let e = errors(
        "[a]\nioengine=null\nsize=1m\n[b]\nioengine=null\nsize=2m\n[c]\nnew_group\nioengine=null\nsize=1m\n",
    );
    assert_eq!(e.len(), 2, "{e:?}");
    assert_starts(&e[0], "dir/x.fio, line 8: invalid new_group");
    assert_starts(
        &e[1],
        "dir/x.fio, line 6: invalid size = 2m (allowed: the same as job [a] beside it (1m)",
    );
    let e = errors("[a]\nioengine=null\nsize=1m\n[b]\nstonewall\nsize=1m\n");
    assert!(
        e[0].contains("invalid filename/directory/ioengine = file:."),
        "{e:?}"
    );
}

#[test]
fn names_with_braces_are_labels_not_templates() {
    let imp = job("[a{b}]\nioengine=null\nsize=1m\n");
    assert_eq!(imp.job.points[0].label, "a{b}");
    round_trips(&imp);
}

#[test]
fn steady_state_options_become_the_gate_over_fios_period() {
    use crate::workload::steady::{SteadyCriterion, SteadyGate, SteadyMetric};
    let base = "[ss]\nioengine=null\nsize=1g\ntime_based\nruntime=60\n";
    // fio watches from ramp_time + ss_ramp to ramp_time + runtime.
    let imp = job(&format!(
        "{base}ramp_time=5\nsteadystate=iops:2%\nsteadystate_duration=30\nsteadystate_ramp_time=10\n"
    ));
    let p = &imp.job.points[0];
    assert_eq!(
        (p.ramp, p.runtime),
        (Duration::from_secs(65), Duration::from_secs(60))
    );
    assert_eq!(
        p.steady,
        Some(SteadyGate {
            metric: SteadyMetric::Iops,
            criterion: SteadyCriterion::Band(2.0),
            window: Duration::from_secs(30),
            delay: Duration::from_secs(15),
        })
    );
    assert!(
        imp.notes.iter().any(|n| n.contains("fio stops the job")),
        "{:?}",
        imp.notes
    );
    round_trips(&imp);
    // The short names; no ramp at all.
    let p = &job(&format!("{base}ss=bw_slope:0.5%\nss_dur=20s\n"))
        .job
        .points[0];
    let g = p.steady.expect("gate");
    assert_eq!(p.ramp, Duration::from_secs(60));
    assert_eq!(
        (g.metric, g.criterion, g.window, g.delay),
        (
            SteadyMetric::Bw,
            SteadyCriterion::Slope(0.5),
            Duration::from_secs(20),
            Duration::ZERO
        )
    );
    // A window alone takes fio's default criterion.
    let g = job(&format!("{base}ss_dur=1m\n")).job.points[0]
        .steady
        .unwrap();
    assert_eq!(
        (g.metric, g.criterion),
        (SteadyMetric::Iops, SteadyCriterion::Slope(0.01))
    );
    // No window: fio detects nothing (its default is 0), nor does storlab.
    let imp = job(&format!("{base}steadystate=iops:2%\n"));
    assert_eq!(imp.job.points[0].steady, None);
    assert!(
        imp.notes
            .iter()
            .any(|n| n.contains("steadystate_duration is 0"))
    );
}

#[test]
fn steady_state_storlab_cannot_honour_is_refused_by_name() {
    let base = "[ss]\nioengine=null\nsize=1g\n";
    let e = errors(&format!(
        "{base}time_based\nruntime=60\nss=iops:2\nss_dur=30\n"
    ));
    assert!(
        e[0].starts_with("dir/x.fio, line 6: invalid ss = iops:2 (allowed: METRIC:P%"),
        "{e:?}"
    );
    let e = errors(&format!("{base}ss=iops:2%\nss_dur=30\n"));
    assert!(
        e[0].starts_with("dir/x.fio, line 1 (job [ss]): invalid runtime = (none)"),
        "{e:?}"
    );
    let e = errors(&format!("{base}steadystate=iops:x%\nss_dur=30\n"));
    assert!(
        e[0].starts_with("dir/x.fio, line 4: invalid steadystate = iops:x%"),
        "{e:?}"
    );
    // The window must fit in the period fio watches.
    let e = errors(&format!(
        "{base}time_based\nruntime=60\nss=iops:2%\nss_dur=50\nss_ramp=20\n"
    ));
    assert!(
        e[0].contains("invalid steadystate_duration = 50 s")
            && e[0].contains("less steadystate_ramp_time 20 s"),
        "{e:?}"
    );
}
