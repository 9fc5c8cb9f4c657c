//! SIGINT/SIGTERM: the first asks the run to stop and save what it measured;
//! a second one exits at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set when SIGINT or SIGTERM arrives.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Install the handlers.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: on_signal only touches an atomic and calls _exit, both
        // async-signal-safe; the handler is a plain extern "C" fn.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}
