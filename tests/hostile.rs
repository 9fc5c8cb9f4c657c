//! Hostile servers (issue 14, item 4): plain TcpListeners that speak just
//! enough of a protocol for storlab to open its target and run, then, 2.5 s
//! into the I/O, break the protocol one way per test — NFS (`nfs.rs`):
//! replies with wrong XIDs, READ data longer than the read, a reply record
//! longer than any reply, a READ reply whose XDR ends early, a connection
//! reset in the middle of a reply, silence; NBD (`nbd.rs`): a reply to no
//! request, a bad reply magic, a reset mid-reply, silence; iSCSI
//! (`iscsi.rs`): Data-In for a task never sent, a bad opcode, Data-In longer
//! than the READ, a data segment past MaxRecvDataSegmentLength, a reset
//! mid-PDU, silence. Each time storlab
//! must end the run with exit 1 and one error naming the target and what was
//! wrong, keep the intervals measured before (in the JSON and the results
//! database), end within its I/O timeout plus a small slack, and not panic.

#[path = "hostile/iscsi.rs"]
mod iscsi;
#[path = "hostile/nbd.rs"]
mod nbd;
#[path = "hostile/nfs.rs"]
mod nfs;
mod support;

use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use support::TempDir;
use support::run::Run;

/// When the fault starts, after the first READ or WRITE.
const FAULT_AFTER: Duration = Duration::from_millis(2500);
/// The run's I/O timeout, and how long past the fault the run may take.
const IO_TIMEOUT: &str = "2s";
const BOUND: Duration = Duration::from_secs(8);

/// Wait until `n` bytes of the next message can be read, looking at `stop`
/// every 200 ms; then set a long timeout so the message is read whole,
/// however slowly it comes. `None` when the peer closed or the server stops.
fn message_begins(s: &mut TcpStream, stop: &AtomicBool, n: usize) -> Option<()> {
    let mut h = vec![0u8; n];
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        s.set_read_timeout(Some(Duration::from_millis(200))).ok()?;
        match s.peek(&mut h) {
            Ok(0) => return None,
            Ok(k) if k >= n => break,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
    }
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()
}

/// Close `s` with a TCP reset (SO_LINGER 0), not a FIN.
fn reset(s: &mut TcpStream) -> std::io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on our own open socket with a valid linger struct.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_LINGER");
    s.shutdown(Shutdown::Read)
}

/// A hostile server on a free port of 127.0.0.1: a thread per connection
/// runs `serve(stream, stop flag, instant of the first I/O)`.
struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Hostile {
    fn start<F>(serve: F) -> Hostile
    where
        F: Fn(TcpStream, &AtomicBool, &OnceLock<Instant>) + Send + Sync + Copy + 'static,
    {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let first_io: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
        let st = stop.clone();
        let accept = std::thread::spawn(move || {
            for s in l.incoming() {
                if st.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(s) = s else { continue };
                let (st, first_io) = (st.clone(), first_io.clone());
                std::thread::spawn(move || serve(s, &st, &first_io));
            }
        });
        Hostile {
            port,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Run `rw` on `url` (a hostile server's); check the run ended in time with
/// an error holding the URL and each of `must`, and kept at least two
/// intervals with I/O.
fn check_run(url: &str, what: &str, rw: &str, must: &[&str]) {
    let dir = TempDir::new("hostile", &what.replace(' ', "-"));
    let args = [
        "--target",
        url,
        "--rw",
        rw,
        "--bs",
        "4k",
        "--iodepth",
        "8",
        "--size",
        "32m",
        "--runtime",
        "30",
        "--io-timeout",
        IO_TIMEOUT,
        "--allow-overwrite",
    ];
    let mut run = Run::start(dir.path(), "run", &args);
    let (status, err, took) = run.wait(FAULT_AFTER + BOUND + Duration::from_secs(5), what);
    assert_eq!(status.code(), Some(1), "{what}: exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{what}: one error line: {err}"
    );
    assert!(
        took < FAULT_AFTER + BOUND,
        "{what}: the run took {took:?}: {err}"
    );
    let doc = run.doc();
    let e = doc["error"].as_str().unwrap_or_default().to_string();
    for m in std::iter::once(&url).chain(must) {
        assert!(e.contains(m), "{what}: the error must name {m:?}: {e}");
        assert!(err.contains(m), "{what}: stderr must name {m:?}: {err}");
    }
    let busy = run
        .intervals(what)
        .iter()
        .filter(|i| {
            ["read", "write"]
                .iter()
                .any(|d| i["stats"][d]["ios"].as_u64().unwrap_or(0) > 0)
        })
        .count();
    assert!(busy >= 2, "{what}: {busy} intervals with I/O kept");
    println!("{what}: ended after {took:?}: {e}");
}
