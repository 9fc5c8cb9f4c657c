//! Every FFI call of the NBD backend: hand-written declarations of the few
//! libnbd functions it uses, and a [`Handle`] around them, safe except for the
//! two calls that keep a buffer (`pread`, `pwrite`: `unsafe fn`s, see
//! docs/unsafe.md).
//!
//! Completion callbacks never own memory: their `user_data` points at a
//! [`Token`] in an array owned by the [`Handle`], and their free function is
//! NULL. `Handle::drop` calls `nbd_close` (which retires every command still
//! queued or in flight, and after which libnbd calls nothing back) before the
//! token array and the completion list are freed, so no callback can reach
//! freed memory, whatever state the connection is in.

use crate::io::IoBuf;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// `struct nbd_handle`, opaque.
#[repr(C)]
struct NbdHandle {
    _opaque: [u8; 0],
}

/// `nbd_completion_callback`, passed by value.
#[repr(C)]
struct CompletionCallback {
    callback: Option<extern "C" fn(*mut c_void, *mut c_int) -> c_int>,
    user_data: *mut c_void,
    free: Option<extern "C" fn(*mut c_void)>,
}

/// `LIBNBD_CMD_FLAG_FUA`.
const CMD_FLAG_FUA: u32 = 0x01;
/// `LIBNBD_AIO_DIRECTION_READ`.
const DIRECTION_READ: c_uint = 1;
/// `LIBNBD_AIO_DIRECTION_WRITE`.
const DIRECTION_WRITE: c_uint = 2;

#[link(name = "nbd")]
unsafe extern "C" {
    fn nbd_create() -> *mut NbdHandle;
    fn nbd_close(h: *mut NbdHandle);
    fn nbd_get_error() -> *const c_char;
    fn nbd_get_errno() -> c_int;
    fn nbd_get_version(h: *mut NbdHandle) -> *const c_char;
    fn nbd_set_export_name(h: *mut NbdHandle, name: *const c_char) -> c_int;
    fn nbd_set_pread_initialize(h: *mut NbdHandle, request: bool) -> c_int;
    fn nbd_set_request_structured_replies(h: *mut NbdHandle, request: bool) -> c_int;
    fn nbd_connect_unix(h: *mut NbdHandle, path: *const c_char) -> c_int;
    fn nbd_connect_tcp(h: *mut NbdHandle, host: *const c_char, port: *const c_char) -> c_int;
    fn nbd_get_size(h: *mut NbdHandle) -> i64;
    fn nbd_is_read_only(h: *mut NbdHandle) -> c_int;
    fn nbd_can_fua(h: *mut NbdHandle) -> c_int;
    fn nbd_can_flush(h: *mut NbdHandle) -> c_int;
    fn nbd_can_multi_conn(h: *mut NbdHandle) -> c_int;
    fn nbd_get_structured_replies_negotiated(h: *mut NbdHandle) -> c_int;
    fn nbd_aio_pread(
        h: *mut NbdHandle,
        buf: *mut c_void,
        count: usize,
        offset: u64,
        cb: CompletionCallback,
        flags: u32,
    ) -> i64;
    fn nbd_aio_pwrite(
        h: *mut NbdHandle,
        buf: *const c_void,
        count: usize,
        offset: u64,
        cb: CompletionCallback,
        flags: u32,
    ) -> i64;
    fn nbd_aio_flush(h: *mut NbdHandle, cb: CompletionCallback, flags: u32) -> i64;
    fn nbd_aio_get_fd(h: *mut NbdHandle) -> c_int;
    fn nbd_aio_get_direction(h: *mut NbdHandle) -> c_uint;
    fn nbd_aio_notify_read(h: *mut NbdHandle) -> c_int;
    fn nbd_aio_notify_write(h: *mut NbdHandle) -> c_int;
    fn nbd_aio_is_dead(h: *mut NbdHandle) -> c_int;
    fn nbd_aio_is_closed(h: *mut NbdHandle) -> c_int;
}

/// A libnbd error: its message (thread-local in libnbd) and errno.
#[derive(Debug, Clone)]
pub(super) struct NbdError {
    /// `nbd_get_error()`, or a stand-in when libnbd gave none.
    pub message: String,
    /// `nbd_get_errno()`; 0 when libnbd did not set one.
    pub errno: i32,
}

/// The last error libnbd recorded on this thread.
fn last_error() -> NbdError {
    // SAFETY: nbd_get_error returns NULL or a NUL-terminated string owned by
    // libnbd (thread-local), valid until the next libnbd call on this thread;
    // it is copied before any other call.
    let message = unsafe {
        let p = nbd_get_error();
        if p.is_null() {
            "unknown libnbd error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    // SAFETY: no arguments; reads libnbd's thread-local errno.
    let errno = unsafe { nbd_get_errno() };
    NbdError { message, errno }
}

fn cstring(s: &str) -> Result<CString, NbdError> {
    CString::new(s).map_err(|_| NbdError {
        message: format!("{s:?} contains a NUL byte"),
        errno: libc::EINVAL,
    })
}

/// Where a completion callback records its command's outcome.
struct Token {
    /// The list of (ticket, errno) the handle's callbacks append to.
    done: *mut RefCell<Vec<(u32, i32)>>,
    /// The ticket this token stands for.
    ticket: u32,
}

/// The completion callback of every command: record (ticket, errno) and retire
/// the command (return 1).
extern "C" fn on_complete(user_data: *mut c_void, error: *mut c_int) -> c_int {
    // SAFETY: user_data is a &Token from the handle's token array, and error
    // points at libnbd's int for this call. The array and the list it points
    // to live until after nbd_close (see the module docs). libnbd runs
    // callbacks only inside calls made on the thread that owns the Handle, and
    // never while `take_done` borrows the list, so the borrow cannot fail.
    unsafe {
        let token = &*(user_data as *const Token);
        (*token.done).borrow_mut().push((token.ticket, *error));
    }
    1
}

/// One libnbd handle (one connection), with the completion list its callbacks fill.
///
/// Commands are identified by a ticket in `0..tickets`; at most one command per
/// ticket may be outstanding, so the list never grows past its capacity.
pub(super) struct Handle {
    h: *mut NbdHandle,
    /// From `Box::into_raw`, freed in drop after `nbd_close`: raw, so that the
    /// callbacks' pointers stay valid while `&mut self` methods run.
    done: *mut RefCell<Vec<(u32, i32)>>,
    /// The tokens, likewise from `Box::into_raw` of a `Box<[Token]>`.
    tokens: *mut [Token],
}

// SAFETY: a libnbd handle may be used from any thread (libnbd locks it). The
// callbacks that touch `done` run only inside calls on the handle, which take
// `&mut self` or `&self` of this non-Sync type, so only one thread at a time.
unsafe impl Send for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: h came from nbd_create and is closed once. nbd_close retires
        // every outstanding command before returning, so no callback runs
        // after it; then tokens and `done`, from Box::into_raw in `new` and
        // freed only here, are no longer referenced.
        unsafe {
            nbd_close(self.h);
            drop(Box::from_raw(self.tokens));
            drop(Box::from_raw(self.done));
        }
    }
}

impl Handle {
    /// A new, unconnected handle whose commands use tickets `0..tickets`.
    pub fn new(tickets: u32) -> Result<Handle, NbdError> {
        // SAFETY: no arguments; returns an owned handle or NULL.
        let h = unsafe { nbd_create() };
        if h.is_null() {
            return Err(last_error());
        }
        let done = Box::into_raw(Box::new(RefCell::new(Vec::with_capacity(tickets as usize))));
        let tokens: Box<[Token]> = (0..tickets).map(|ticket| Token { done, ticket }).collect();
        let tokens = Box::into_raw(tokens);
        Ok(Handle { h, done, tokens })
    }

    fn check(r: c_int) -> Result<(), NbdError> {
        if r == -1 { Err(last_error()) } else { Ok(()) }
    }

    fn flag(r: c_int) -> Result<bool, NbdError> {
        if r == -1 {
            Err(last_error())
        } else {
            Ok(r != 0)
        }
    }

    /// libnbd's version, e.g. "1.14.2".
    pub fn version(&self) -> String {
        // SAFETY: h is valid; the result is a static string of libnbd.
        unsafe {
            let p = nbd_get_version(self.h);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// Set the export name to ask for when connecting.
    pub fn set_export_name(&mut self, name: &str) -> Result<(), NbdError> {
        let name = cstring(name)?;
        // SAFETY: h is valid; libnbd copies the string.
        Self::check(unsafe { nbd_set_export_name(self.h, name.as_ptr()) })
    }

    /// Whether libnbd zeroes read buffers before each read.
    pub fn set_pread_initialize(&mut self, on: bool) -> Result<(), NbdError> {
        // SAFETY: h is valid.
        Self::check(unsafe { nbd_set_pread_initialize(self.h, on) })
    }

    /// Whether to ask the server for structured replies when connecting.
    pub fn set_request_structured_replies(&mut self, on: bool) -> Result<(), NbdError> {
        // SAFETY: h is valid; called before connecting.
        Self::check(unsafe { nbd_set_request_structured_replies(self.h, on) })
    }

    /// Connect (blocking, handshake included) to a Unix socket.
    pub fn connect_unix(&mut self, path: &Path) -> Result<(), NbdError> {
        let path = CString::new(path.as_os_str().as_bytes()).map_err(|_| NbdError {
            message: format!("{} contains a NUL byte", path.display()),
            errno: libc::EINVAL,
        })?;
        // SAFETY: h is valid; the string outlives the call.
        Self::check(unsafe { nbd_connect_unix(self.h, path.as_ptr()) })
    }

    /// Connect (blocking, handshake included) over TCP.
    pub fn connect_tcp(&mut self, host: &str, port: u16) -> Result<(), NbdError> {
        let host = cstring(host)?;
        let port = cstring(&port.to_string())?;
        // SAFETY: h is valid; the strings outlive the call.
        Self::check(unsafe { nbd_connect_tcp(self.h, host.as_ptr(), port.as_ptr()) })
    }

    /// The export's size in bytes.
    pub fn size(&self) -> Result<u64, NbdError> {
        // SAFETY: h is valid.
        let r = unsafe { nbd_get_size(self.h) };
        if r < 0 {
            Err(last_error())
        } else {
            Ok(r as u64)
        }
    }

    /// Whether the export is read-only.
    pub fn is_read_only(&self) -> Result<bool, NbdError> {
        // SAFETY: h is valid.
        Self::flag(unsafe { nbd_is_read_only(self.h) })
    }

    /// Whether the server honours the FUA flag.
    pub fn can_fua(&self) -> Result<bool, NbdError> {
        // SAFETY: h is valid.
        Self::flag(unsafe { nbd_can_fua(self.h) })
    }

    /// Whether the server accepts flush commands.
    pub fn can_flush(&self) -> Result<bool, NbdError> {
        // SAFETY: h is valid.
        Self::flag(unsafe { nbd_can_flush(self.h) })
    }

    /// Whether the server advertises multi-conn (NBD_FLAG_CAN_MULTI_CONN):
    /// connections to the export see each other's writes, and a flush on one
    /// covers writes completed on all.
    pub fn can_multi_conn(&self) -> Result<bool, NbdError> {
        // SAFETY: h is valid.
        Self::flag(unsafe { nbd_can_multi_conn(self.h) })
    }

    /// Whether structured replies were negotiated.
    pub fn structured_replies(&self) -> bool {
        // SAFETY: h is valid.
        unsafe { nbd_get_structured_replies_negotiated(self.h) == 1 }
    }

    fn callback(&self, ticket: u32) -> CompletionCallback {
        assert!(
            (ticket as usize) < self.tokens.len(),
            "ticket {ticket} out of range"
        );
        let token = self.tokens.cast::<Token>().wrapping_add(ticket as usize);
        CompletionCallback {
            callback: Some(on_complete),
            user_data: token as *mut c_void,
            free: None,
        }
    }

    fn cookie(r: i64) -> Result<(), NbdError> {
        if r == -1 { Err(last_error()) } else { Ok(()) }
    }

    /// Start reading `buf`'s length at `offset` into `buf` for `ticket`.
    ///
    /// # Safety
    /// libnbd writes into `buf` until this ticket's callback has run (its
    /// entry is in [`Handle::take_done`]) or the handle is dropped, whatever
    /// becomes of the `IoBuf` handle: the caller keeps the lease alive until
    /// then. A call that fails started nothing.
    pub unsafe fn pread(&mut self, ticket: u32, buf: &IoBuf, offset: u64) -> Result<(), NbdError> {
        let cb = self.callback(ticket);
        let (p, len) = (buf.as_mut_ptr(), buf.len() as usize);
        // SAFETY: h is valid; buf is leased for len bytes until the command is
        // retired (the caller's contract); cb's token outlives the handle's commands.
        Self::cookie(unsafe { nbd_aio_pread(self.h, p.cast(), len, offset, cb, 0) })
    }

    /// Start writing `buf` at `offset` for `ticket`, with FUA if asked.
    ///
    /// # Safety
    /// libnbd reads `buf` until this ticket's callback has run or the handle
    /// is dropped, as for [`Handle::pread`].
    pub unsafe fn pwrite(
        &mut self,
        ticket: u32,
        buf: &IoBuf,
        offset: u64,
        fua: bool,
    ) -> Result<(), NbdError> {
        let cb = self.callback(ticket);
        let flags = if fua { CMD_FLAG_FUA } else { 0 };
        let (p, len) = (buf.as_ptr(), buf.len() as usize);
        // SAFETY: as in pread; libnbd only reads buf.
        Self::cookie(unsafe { nbd_aio_pwrite(self.h, p.cast(), len, offset, cb, flags) })
    }

    /// Start a flush for `ticket`.
    pub fn flush(&mut self, ticket: u32) -> Result<(), NbdError> {
        let cb = self.callback(ticket);
        // SAFETY: h is valid; cb's token outlives the handle's commands.
        Self::cookie(unsafe { nbd_aio_flush(self.h, cb, 0) })
    }

    /// Move the (ticket, errno) pairs of finished commands into `out`.
    pub fn take_done(&mut self, out: &mut Vec<(u32, i32)>) {
        // SAFETY: `done` lives until drop; no libnbd call (hence no callback)
        // runs during this borrow.
        let done = unsafe { &*self.done };
        out.append(&mut done.borrow_mut());
    }

    /// The socket, for poll.
    pub fn fd(&self) -> c_int {
        // SAFETY: h is valid.
        unsafe { nbd_aio_get_fd(self.h) }
    }

    /// Poll events libnbd waits for: POLLIN, POLLOUT or both.
    pub fn poll_events(&self) -> i16 {
        // SAFETY: h is valid.
        let dir = unsafe { nbd_aio_get_direction(self.h) };
        let mut ev = 0;
        if dir & DIRECTION_READ != 0 {
            ev |= libc::POLLIN;
        }
        if dir & DIRECTION_WRITE != 0 {
            ev |= libc::POLLOUT;
        }
        ev
    }

    /// Tell libnbd the socket is readable; it runs callbacks of finished commands.
    pub fn notify_read(&mut self) -> Result<(), NbdError> {
        // SAFETY: h is valid.
        Self::check(unsafe { nbd_aio_notify_read(self.h) })
    }

    /// Tell libnbd the socket is writable.
    pub fn notify_write(&mut self) -> Result<(), NbdError> {
        // SAFETY: h is valid.
        Self::check(unsafe { nbd_aio_notify_write(self.h) })
    }

    /// Whether the connection is dead or closed (no command can complete).
    pub fn is_broken(&self) -> bool {
        // SAFETY: h is valid.
        unsafe { nbd_aio_is_dead(self.h) == 1 || nbd_aio_is_closed(self.h) == 1 }
    }
}

/// ppoll(2) over `fds`, `None` waiting without bound; EINTR counts as no event.
pub(super) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid slice of pollfd; tsp is NULL or points at ts,
    // which outlives the call; a NULL sigmask keeps the current one.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}
