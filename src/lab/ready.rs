//! Readiness: poll a real client probe until it passes, the server dies, or the
//! deadline passes. No fixed sleeps: the poll interval only spaces the probes.

use super::LabError;
use crate::process::Proc;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long a server may take to become ready.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Lines of a server's log quoted in an error.
pub const LOG_LINES: usize = 15;

/// A TCP connection to `addr:port` can be made.
pub fn tcp(addr: Ipv4Addr, port: u16) -> Result<(), String> {
    TcpStream::connect_timeout(&SocketAddr::from((addr, port)), Duration::from_secs(1))
        .map(|_| ())
        .map_err(|e| format!("TCP connect {addr}:{port}: {e}"))
}

/// Poll `probe` until it passes; fail if `proc` exits or `DEADLINE` passes.
pub fn wait(
    server: &str,
    proc: &Proc,
    mut probe: impl FnMut() -> Result<(), String>,
) -> Result<(), LabError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        if !proc.alive() {
            return Err(LabError::Server {
                server: server.into(),
                message: format!("exited during start-up (pid {})", proc.pid),
                log: proc.log.clone(),
                log_tail: proc.log_tail(LOG_LINES),
            });
        }
        let last = match probe() {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if start.elapsed() >= DEADLINE {
            return Err(LabError::Server {
                server: server.into(),
                message: format!("not ready after {} s: {last}", DEADLINE.as_secs()),
                log: proc.log.clone(),
                log_tail: proc.log_tail(LOG_LINES),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}
