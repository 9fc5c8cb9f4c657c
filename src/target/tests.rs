//! The target URLs' tests: parsing, printing, errors.

use super::*;

#[test]
fn parses_file_and_null() {
    assert_eq!(Target::parse("null:").unwrap(), Target::Null);
    for (url, path) in [
        ("file:/tmp/x", "/tmp/x"),
        ("file:///tmp/x", "/tmp/x"),
        ("file:rel/dir", "rel/dir"),
    ] {
        assert_eq!(
            Target::parse(url).unwrap(),
            Target::File(path.into()),
            "{url}"
        );
    }
}

#[test]
fn a_directory_url_may_end_at_the_export() {
    let t = Target::parse_dir("nfs://h:2049/storlab?version=4.1&mountport=7").unwrap();
    let Target::Nfs(NfsTarget {
        export,
        path,
        minor,
        mount_port,
        ..
    }) = &t
    else {
        panic!("{t:?}")
    };
    assert_eq!(
        (export.as_str(), path.as_str(), *minor),
        ("/storlab", "", 1)
    );
    assert_eq!(*mount_port, Some(7));
    assert_eq!(Target::parse_dir(&t.to_string()).unwrap(), t);
    let t = Target::parse_dir("nfs://h/storlab/runs/a/?version=3").unwrap();
    assert!(
        matches!(&t, Target::Nfs(NfsTarget { path, .. }) if path == "runs/a"),
        "{t:?}"
    );
    // A file URL still needs its file; a directory URL needs an export.
    assert!(Target::parse("nfs://h/storlab?version=3").is_err());
    let e = Target::parse_dir("nfs://h/?version=3").unwrap_err();
    assert!(e.to_string().contains("/EXPORT[/DIR]"), "{e}");
    assert_eq!(
        Target::parse_dir("file:/tmp/d").unwrap(),
        Target::File("/tmp/d".into())
    );
}

#[test]
fn a_file_capped_at_an_fc_link_round_trips_and_bad_links_are_named() {
    let t = Target::parse("file:/dev/loop3?fc=8gfc").unwrap();
    assert_eq!(
        t,
        Target::Fc {
            path: "/dev/loop3".into(),
            link: "8gfc".into(),
            wire: FcWire::Fc,
        }
    );
    assert_eq!(t.to_string(), "file:/dev/loop3?fc=8gfc");
    assert_eq!(t.local_path(), Some(Path::new("/dev/loop3")));
    assert_eq!(t.backend_name(), "file");
    // Any other `?` stays part of the path.
    assert_eq!(
        Target::parse("file:/tmp/a?b").unwrap(),
        Target::File("/tmp/a?b".into())
    );
    let e = Target::parse("file:/dev/loop3?fc=10gfc")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("invalid fc=\"10gfc\" (allowed: 1gfc, 2gfc, 4gfc, 8gfc, 16gfc, 32gfc)"),
        "{e}"
    );
    assert!(Target::parse("file:?fc=8gfc").is_err());
}

#[test]
fn a_file_capped_at_an_fcoe_link_round_trips_and_bad_links_are_named() {
    let t = Target::parse("file:/dev/loop3?fcoe=10gbe").unwrap();
    assert_eq!(
        t,
        Target::Fc {
            path: "/dev/loop3".into(),
            link: "10gbe".into(),
            wire: FcWire::Fcoe,
        }
    );
    assert_eq!(t.to_string(), "file:/dev/loop3?fcoe=10gbe");
    assert_eq!(t.storage(), Target::File("/dev/loop3".into()));
    assert_eq!(t.backend_name(), "file");
    // FCoE runs on Ethernet of 10 Gb/s or more, never on an FC link; FC
    // never on Ethernet.
    for (url, want) in [
        (
            "file:/d?fcoe=1gbe",
            "invalid fcoe=\"1gbe\" (allowed: 10gbe, 25gbe, 40gbe, 100gbe)",
        ),
        (
            "file:/d?fcoe=8gfc",
            "invalid fcoe=\"8gfc\" (allowed: 10gbe, 25gbe, 40gbe, 100gbe)",
        ),
        (
            "file:/d?fc=10gbe",
            "invalid fc=\"10gbe\" (allowed: 1gfc, 2gfc, 4gfc, 8gfc, 16gfc, 32gfc)",
        ),
        (
            "file:/d?fcoe=",
            "invalid fcoe=\"\" (allowed: 10gbe, 25gbe, 40gbe, 100gbe)",
        ),
    ] {
        let e = Target::parse(url).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert!(
            e.contains("(form: file:PATH[?fc=1gfc..32gfc|?fcoe=10gbe..100gbe])"),
            "{e}"
        );
    }
    assert!(Target::parse("file:?fcoe=10gbe").is_err());
    // The last cap wins; what is before it is the path.
    assert_eq!(
        Target::parse("file:/a?fc=8gfc?fcoe=25gbe").unwrap(),
        Target::Fc {
            path: "/a?fc=8gfc".into(),
            link: "25gbe".into(),
            wire: FcWire::Fcoe,
        }
    );
    // Each wire's links are the wire model's that carry its protocol.
    for w in FcWire::ALL {
        for l in w.links() {
            let link = crate::linkmodel::Link::named(&l).unwrap();
            assert!(w.protocol().runs_on(&link), "{l}");
        }
    }
}

#[test]
fn parses_protocol_urls() {
    assert_eq!(
        Target::parse("nfs://127.0.0.1:12049/export/data/disk.img?version=4").unwrap(),
        Target::Nfs(NfsTarget {
            host: "127.0.0.1".into(),
            port: 12049,
            mount_port: None,
            export: "/export".into(),
            path: "data/disk.img".into(),
            version: 4,
            minor: 0,
            nconnect: 1,
            file_sync: false,
        })
    );
    let t = Target::parse("nfs://h/a/b/f?export=/a/b&mountport=20048").unwrap();
    assert!(
        matches!(&t, Target::Nfs(NfsTarget { export, path, mount_port: Some(20048), version: 3, port: 2049, .. })
        if export == "/a/b" && path == "f")
    );
    assert_eq!(
        Target::parse("iscsi://[::1]:3261/iqn.2026-11.lab.storlab:store/1").unwrap(),
        Target::Iscsi {
            host: "::1".into(),
            port: 3261,
            iqn: "iqn.2026-11.lab.storlab:store".into(),
            lun: 1,
            nconnect: 1,
        }
    );
    assert_eq!(
        Target::parse("nbd://localhost/store").unwrap(),
        Target::Nbd {
            addr: NbdAddr::Tcp {
                host: "localhost".into(),
                port: 10809
            },
            export: "store".into(),
            replies: NbdReplies::Simple,
            nconnect: 1,
        }
    );
    assert_eq!(
        Target::parse("nbd+unix:///store?socket=/run/x.sock").unwrap(),
        Target::Nbd {
            addr: NbdAddr::Unix("/run/x.sock".into()),
            export: "store".into(),
            replies: NbdReplies::Simple,
            nconnect: 1,
        }
    );
}

#[test]
fn errors_name_input_and_allowed_schemes() {
    for bad in [
        "/tmp/x",
        "nfs3:/x",
        "file:",
        "null:/x",
        ":x",
        "nfs://h/export",
        "nfs://h/e/f?version=5",
        "nfs://h/e/f?version=4.2",
        "nfs://h:0/e/f",
        "nfs://h/e/../f",
        "iscsi://h/notaname/1",
        "iscsi://h/iqn.x/lun",
        "nbd+unix:///e",
        "nbd://h/e?x=1",
        "nbd://h/e?replies=fast",
        "nbd+unix:///e?socket=/s&replies=",
        "nbd:/h",
        "nfs://h/e/f?nconnect=0",
        "nfs://h/e/f?nconnect=17",
        "nfs://h/e/f?stable=data",
        "nbd://h/e?nconnect=x",
        "nbd+unix:///e?socket=/s&nconnect=",
    ] {
        let e = Target::parse(bad).unwrap_err().to_string();
        assert!(e.contains(&format!("{bad:?}")), "{e}");
        // One form: the scheme's own, or every scheme's when the scheme
        // itself is unknown; never both, and one list of allowed values.
        match scheme_form(bad) {
            Some(form) => {
                assert!(e.contains(&format!("(form: {form})")), "{e}");
                assert!(!e.contains(&allowed_schemes()), "{e}");
            }
            None => {
                assert!(
                    e.contains(&format!("(allowed: {})", allowed_schemes())),
                    "{e}"
                );
                assert!(!e.contains("(form: "), "{e}");
            }
        }
        assert!(e.matches("(allowed: ").count() <= 1, "{e}");
    }
    for bad in ["bogus://x", "nf://h/e/f"] {
        let e = Target::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!("(allowed: {})", allowed_schemes())),
            "{e}"
        );
    }
}

#[test]
fn display_round_trips() {
    for s in [
        "null:",
        "file:/a/b",
        "file:/a/b?fc=32gfc",
        "file:/a/b?fcoe=100gbe",
        "nfs://h:2049/export/f?version=3",
        "nfs://h:12049/e/d/f?version=4&mountport=20048",
        "iscsi://10.99.0.1:3260/iqn.2026-11.lab.storlab:store/1",
        "nbd://h:10809/e",
        "nbd://h:10809/e?replies=structured",
        "nbd+unix:///e?socket=/run/s.sock&replies=structured",
        "nbd+unix:///e?socket=/s",
        "nfs://h:2049/e/f?version=4&nconnect=4",
        "nfs://h:2049/e/f?version=4.1&nconnect=4",
        "nfs://h:2049/e/f?version=4.1",
        "nfs://h:2049/e/f?version=3&stable=file",
        "nfs://h:2049/e/f?version=4.1&stable=file&nconnect=2",
        "nfs://h:2049/a/b/f?version=3&export=/a/b&nconnect=16",
        "nbd://h:10809/e?nconnect=2",
        "nbd://h:10809/e?replies=structured&nconnect=8",
        "nbd+unix:///e?socket=/s&nconnect=3",
        "iscsi://h:3260/iqn.2026-11.lab.storlab:store/1?nconnect=2",
    ] {
        assert_eq!(Target::parse(s).unwrap().to_string(), s);
    }
}

#[test]
fn targets_map_to_their_wire_protocol() {
    let p = |url: &str| Target::parse(url).unwrap().network_protocol();
    assert_eq!(p("nfs://h/e/f?version=3"), Some(Protocol::Nfs3));
    assert_eq!(p("nfs://h/e/f?version=4"), Some(Protocol::Nfs4));
    assert_eq!(p("nfs://h/e/f?version=4.1"), Some(Protocol::Nfs41));
    assert_eq!(p("iscsi://h/iqn.2025-01.x:y/1"), Some(Protocol::Iscsi));
    assert_eq!(p("nbd://h/x"), Some(Protocol::Nbd));
    assert_eq!(
        p("nbd://h/x?replies=structured"),
        Some(Protocol::NbdStructured)
    );
    assert_eq!(p("nbd+unix:///x?socket=/tmp/s"), None);
    assert_eq!(p("null:"), None);
    assert_eq!(p("file:/tmp"), None);
    assert_eq!(p("file:/dev/loop3?fc=8gfc"), None);
    assert_eq!(p("file:/dev/loop3?fcoe=10gbe"), None);
}

#[test]
fn storage_ignores_how_it_is_reached() {
    let a = Target::parse("nbd://h/e?replies=structured&nconnect=4").unwrap();
    let b = Target::parse("nbd://h/e").unwrap();
    assert_ne!(a, b);
    assert_eq!(a.storage(), b);
    let a = Target::parse("nfs://h/e/f?nconnect=2&stable=file").unwrap();
    assert_eq!(a.storage(), Target::parse("nfs://h/e/f").unwrap());
    assert_ne!(a.storage(), Target::parse("nfs://h/e/g").unwrap());
}

#[test]
fn nconnect_errors_name_the_option_and_its_range() {
    for bad in ["0", "17", "256", "-1", "four", ""] {
        let e = Target::parse(&format!("nfs://h/e/f?nconnect={bad}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("invalid nconnect={bad:?} (allowed: 1..=16)")),
            "{e}"
        );
    }
    let e = Target::parse("nfs://h/e/f?nconnects=2")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown query parameter \"nconnects\" (allowed: version, mountport, export, nconnect, stable)"),
        "{e}"
    );
    let t = Target::parse("nfs://h/e/f?nconnect=16").unwrap();
    assert!(matches!(t, Target::Nfs(NfsTarget { nconnect: 16, .. })));
}

#[test]
fn nfs_versions_and_their_errors() {
    for (v, version, minor) in [("3", 3, 0), ("4", 4, 0), ("4.0", 4, 0), ("4.1", 4, 1)] {
        let t = Target::parse(&format!("nfs://h/e/f?version={v}")).unwrap();
        assert!(
            matches!(t, Target::Nfs(NfsTarget { version: a, minor: b, .. }) if a == version && b == minor),
            "{v}: {t:?}"
        );
    }
    let t = Target::parse("nfs://h/e/f?version=4.0").unwrap();
    assert_eq!(t.to_string(), "nfs://h:2049/e/f?version=4");
    for bad in ["4.2", "5", "41", "4.", ""] {
        let e = Target::parse(&format!("nfs://h/e/f?version={bad}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "invalid version={bad:?} (allowed: 3, 4, 4.0, 4.1)"
            )),
            "{e}"
        );
    }
}
