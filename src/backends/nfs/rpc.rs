//! ONC RPC v2 (RFC 5531) over one TCP connection, many calls in flight.
//!
//! * **Record marking.** Every call is one record of one fragment (a 4-byte
//!   header, top bit "last fragment"). Replies may come in any number of
//!   fragments; the receive path follows fragment boundaries byte by byte, so a
//!   header may fall anywhere, even inside READ data.
//! * **Credentials.** AUTH_SYS with uid 0, gid 0 and no supplementary groups;
//!   the verifier is AUTH_NONE. Both are encoded once per connection.
//! * **XIDs.** A call's XID is `sequence << 16 | index` of its entry in the
//!   pending table, so a reply finds its call with one array access; the
//!   sequence part rejects a stale reply to a reused index.
//! * **Sending.** Calls are encoded in place into one send buffer. A WRITE's
//!   payload is not copied: it is a separate segment pointing at the caller's
//!   buffer, and `flush` hands header and payload segments to one `sendmsg`
//!   (gather write) on the non-blocking socket, resuming after partial writes.
//! * **Receiving.** `receive` reads whatever the socket holds without blocking.
//!   A reply is collected until its header parses; for a call that registered a
//!   destination (a READ), the procedure's header parser (see [`Head`]) finds
//!   the data, which is then copied to the destination, and read from the socket
//!   straight into it (`readv` of destination + receive buffer) when it is not
//!   already buffered. Everything else is collected whole and handed to the
//!   caller's callback.

use super::xdr::{Dec, Enc, Short};
use std::fmt;
use std::io::{self, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// Program numbers and versions we speak.
pub const PMAP_PROG: u32 = 100_000;
/// The portmapper version of PMAPPROC_GETPORT.
pub const PMAP_VERS: u32 = 2;
/// The MOUNT program.
pub const MOUNT_PROG: u32 = 100_005;
/// The NFS program.
pub const NFS_PROG: u32 = 100_003;

const CALL: u32 = 0;
const REPLY: u32 = 1;
const AUTH_NONE: u32 = 0;
const AUTH_SYS: u32 = 1;
const LAST_FRAGMENT: u32 = 1 << 31;
/// The tag of the calls made by [`Conn::call`].
pub const SYNC_TAG: u64 = u64::MAX;
/// Bytes appended to a reply being collected per step while its header is
/// not yet parsed (so most READ data is not collected first).
const HEAD_STEP: usize = 256;
/// Receive buffer size.
const RX_SIZE: usize = 512 * 1024;
/// Read into the receive buffer only with at least this much room.
const RX_MIN_ROOM: usize = 64 * 1024;
/// Segments per `sendmsg`.
const MAX_IOV: usize = 1024;
/// The most bytes of one reply collected in memory (everything but READ
/// data, which goes to its destination): far above any reply storlab asks
/// for, so a larger one is garbage and must not grow the buffer unbounded.
pub const MAX_COLLECT: usize = 256 * 1024;

/// An RPC-level failure.
#[derive(Debug)]
pub enum RpcError {
    /// A socket error.
    Io(io::Error),
    /// The server closed the connection.
    Closed,
    /// No reply within the time allowed.
    Timeout(Duration),
    /// The server rejected or did not accept the call (program not served,
    /// version mismatch, authentication refused, garbage arguments).
    Rejected(String),
    /// The server sent something that is not a valid reply.
    Protocol(String),
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Io(e) => write!(f, "{e}"),
            RpcError::Closed => write!(f, "connection closed by the server"),
            RpcError::Timeout(d) => write!(f, "no reply in {} s", d.as_secs()),
            RpcError::Rejected(s) => write!(f, "call rejected: {s}"),
            RpcError::Protocol(s) => write!(f, "protocol error: {s}"),
        }
    }
}

impl std::error::Error for RpcError {}

impl From<io::Error> for RpcError {
    fn from(e: io::Error) -> Self {
        RpcError::Io(e)
    }
}

/// What a READ reply's header parser found in the bytes after the RPC header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    /// The header is not complete yet.
    More,
    /// The data starts `len` bytes into the body and is `count` bytes long.
    Data {
        /// Header length before the data.
        len: usize,
        /// Data bytes (the opaque's length word).
        count: u32,
    },
    /// The reply carries no data (an error status): collect it whole.
    NoData,
}

/// A procedure-specific READ reply header parser.
pub type HeadParser = fn(&[u8]) -> Head;

/// A successful reply handed to `receive`'s callback.
#[derive(Debug)]
pub struct Body<'a> {
    /// The procedure's result after the RPC header; for a READ whose data went
    /// to its destination, only the part before the data.
    pub body: &'a [u8],
    /// For a READ whose data went to its destination: the byte count.
    pub data: Option<u32>,
}

/// Parse an RPC reply header: Ok((xid, Ok(body offset) or the RPC error)).
/// Public for the `nfs_reply` fuzz target; any bytes give a value or
/// `Short`, never a panic.
pub fn parse_reply(msg: &[u8]) -> Result<(u32, Result<usize, RpcError>), Short> {
    let mut d = Dec::new(msg);
    let xid = d.u32()?;
    if d.u32()? != REPLY {
        return Ok((
            xid,
            Err(RpcError::Protocol(
                "a call where a reply was expected".into(),
            )),
        ));
    }
    let err = match d.u32()? {
        0 => {
            d.u32()?; // verifier flavor
            d.opaque()?;
            match d.u32()? {
                0 => return Ok((xid, Ok(d.pos()))),
                1 => "program unavailable".to_string(),
                2 => {
                    let (lo, hi) = (d.u32()?, d.u32()?);
                    format!("program version mismatch (server has {lo}..={hi})")
                }
                3 => "procedure unavailable".into(),
                4 => "garbage arguments".into(),
                5 => "system error".into(),
                n => format!("accept status {n}"),
            }
        }
        1 => match d.u32()? {
            0 => {
                let (lo, hi) = (d.u32()?, d.u32()?);
                format!("RPC version mismatch (server has {lo}..={hi})")
            }
            _ => format!("authentication error {} (AUTH_SYS refused)", d.u32()?),
        },
        n => return Ok((xid, Err(RpcError::Protocol(format!("reply status {n}"))))),
    };
    Ok((xid, Err(RpcError::Rejected(err))))
}

/// A call awaiting its reply.
#[derive(Clone, Copy)]
struct Pend {
    xid: u32,
    live: bool,
    tag: u64,
    dst: *mut u8,
    dst_len: u32,
}

/// A piece of the send queue.
#[derive(Clone, Copy)]
enum Seg {
    /// Bytes `start..end` of the send buffer.
    Own(usize, usize),
    /// A caller's buffer (WRITE payload).
    User(*const u8, usize),
}

/// Where the receive path is within the current reply.
#[derive(Clone, Copy)]
enum St {
    /// Appending to `msg`.
    Collect,
    /// Copying READ data to `dst`; `left` bytes to go.
    Direct {
        idx: usize,
        dst: *mut u8,
        left: usize,
        count: u32,
        body: usize,
    },
    /// READ data done: discarding the rest of the record (padding).
    Skip { idx: usize, count: u32, body: usize },
    /// A reply to no call of ours: discarding the record.
    Discard,
}

impl St {
    /// `k` bytes of READ data landed at `dst` (read there directly or copied
    /// from the receive buffer): move past them and, once none are left,
    /// skip the rest of the record. Nothing in any other state.
    fn landed(&mut self, k: usize) {
        if let St::Direct {
            idx,
            dst,
            left,
            count,
            body,
        } = self
        {
            *dst = dst.wrapping_add(k);
            *left -= k;
            if *left == 0 {
                *self = St::Skip {
                    idx: *idx,
                    count: *count,
                    body: *body,
                };
            }
        }
    }
}

/// One TCP connection carrying pipelined RPCs.
pub struct Conn {
    stream: TcpStream,
    cred: Vec<u8>,
    seq: u16,
    pend: Vec<Pend>,
    free: Vec<usize>,
    outstanding: usize,
    tx: Vec<u8>,
    segs: Vec<Seg>,
    sent_seg: usize,
    sent_off: usize,
    iov: Vec<libc::iovec>,
    rx: Vec<u8>,
    rd: usize,
    wr: usize,
    in_frag: bool,
    frag_left: usize,
    last: bool,
    msg: Vec<u8>,
    collect_all: bool,
    st: St,
    read_head: HeadParser,
    /// Replies that matched no call in flight, and the XID of the first.
    stray: u64,
    first_stray: u32,
}

// SAFETY: the raw pointers are WRITE payloads and READ destinations handed
// over by `start`, whose contract keeps them valid until their reply is
// delivered, from whatever thread; the connection is used by one thread at a
// time (`&mut self`).
unsafe impl Send for Conn {}

fn no_head(_: &[u8]) -> Head {
    Head::NoData
}

impl Conn {
    /// Connect to `host:port` (trying every address it resolves to).
    pub fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Conn> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "host name resolves to no address");
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => return Conn::from_stream(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn from_stream(stream: TcpStream) -> io::Result<Conn> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let mut cred = Vec::new();
        let mut body = Vec::new();
        Enc::new(&mut body)
            .u32(std::process::id())
            .string("storlab")
            .u32(0)
            .u32(0)
            .u32(0);
        Enc::new(&mut cred)
            .u32(AUTH_SYS)
            .opaque(&body)
            .u32(AUTH_NONE)
            .u32(0);
        Ok(Conn {
            stream,
            cred,
            seq: 1,
            pend: Vec::new(),
            free: Vec::new(),
            outstanding: 0,
            tx: Vec::with_capacity(64 * 1024),
            segs: Vec::new(),
            sent_seg: 0,
            sent_off: 0,
            iov: Vec::new(),
            rx: vec![0; RX_SIZE],
            rd: 0,
            wr: 0,
            in_frag: false,
            frag_left: 0,
            last: false,
            msg: Vec::with_capacity(4096),
            collect_all: false,
            st: St::Collect,
            read_head: no_head,
            stray: 0,
            first_stray: 0,
        })
    }

    /// Set the parser of READ reply headers (calls with a destination).
    pub fn set_read_head(&mut self, p: HeadParser) {
        self.read_head = p;
    }

    /// The socket, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// Whether calls are waiting to be sent.
    pub fn wants_write(&self) -> bool {
        self.sent_seg < self.segs.len()
    }

    /// Replies discarded because they matched no call in flight (a wrong
    /// XID, or a second reply to one call), and the XID of the first.
    pub fn stray(&self) -> (u64, u32) {
        (self.stray, self.first_stray)
    }

    fn count_stray(&mut self, xid: u32) {
        if self.stray == 0 {
            self.first_stray = xid;
        }
        self.stray += 1;
    }

    /// Calls sent or queued whose reply has not arrived.
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    fn push_seg(&mut self, seg: Seg) {
        if let (Seg::Own(a, b), Some(Seg::Own(_, end))) = (seg, self.segs.last_mut())
            && *end == a
        {
            *end = b;
            return;
        }
        self.segs.push(seg);
    }

    /// Queue a call: the RPC header, `args` encoded in place, then `payload`
    /// (sent from the caller's memory, followed by XDR padding). A reply's
    /// READ data goes to `dst` when given. Returns the XID.
    ///
    /// # Safety
    /// The connection keeps both pointers after this returns: `payload`
    /// (`len` bytes, read while sending) and `dst` (`len` bytes, written when
    /// the reply's READ data arrives) must stay valid, and `dst` unused by
    /// anyone else, until this call's reply has been delivered (`receive`
    /// called back with its tag) or the connection dropped.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn start(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        tag: u64,
        dst: Option<(*mut u8, u32)>,
        payload: Option<(*const u8, usize)>,
        args: impl FnOnce(&mut Enc),
    ) -> u32 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                assert!(self.pend.len() < 1 << 16, "more than 65536 RPCs in flight");
                self.pend.push(Pend {
                    xid: 0,
                    live: false,
                    tag: 0,
                    dst: std::ptr::null_mut(),
                    dst_len: 0,
                });
                self.pend.len() - 1
            }
        };
        self.seq = self.seq.wrapping_add(1);
        let xid = (self.seq as u32) << 16 | idx as u32;
        let (dst, dst_len) = dst.unwrap_or((std::ptr::null_mut(), 0));
        self.pend[idx] = Pend {
            xid,
            live: true,
            tag,
            dst,
            dst_len,
        };
        self.outstanding += 1;

        let mark = self.tx.len();
        self.tx.extend_from_slice(&[0; 4]);
        let mut e = Enc::new(&mut self.tx);
        e.u32(xid).u32(CALL).u32(2).u32(prog).u32(vers).u32(proc_);
        e.buf.extend_from_slice(&self.cred);
        args(&mut e);
        let plen = payload.map_or(0, |p| p.1);
        let pad = super::xdr::pad(plen);
        let len = (self.tx.len() - mark - 4 + plen + pad) as u32;
        self.tx[mark..mark + 4].copy_from_slice(&(LAST_FRAGMENT | len).to_be_bytes());
        self.push_seg(Seg::Own(mark, self.tx.len()));
        if let Some((p, n)) = payload
            && n > 0
        {
            self.push_seg(Seg::User(p, n));
            if pad > 0 {
                let at = self.tx.len();
                self.tx.extend_from_slice(&[0; 3][..pad]);
                self.push_seg(Seg::Own(at, self.tx.len()));
            }
        }
        xid
    }

    /// Send what the socket takes without blocking. Ok(true) when all is sent.
    pub fn flush(&mut self) -> Result<bool, RpcError> {
        while self.sent_seg < self.segs.len() {
            self.iov.clear();
            for (i, seg) in self.segs[self.sent_seg..].iter().take(MAX_IOV).enumerate() {
                let (p, n) = match *seg {
                    Seg::Own(a, b) => (self.tx[a..].as_ptr(), b - a),
                    Seg::User(p, n) => (p, n),
                };
                let skip = if i == 0 { self.sent_off } else { 0 };
                self.iov.push(libc::iovec {
                    iov_base: p.wrapping_add(skip) as *mut libc::c_void,
                    iov_len: n - skip,
                });
            }
            // SAFETY: a zeroed msghdr is valid; the iovecs point into our send
            // buffer or into caller buffers that `start`'s contract keeps valid.
            let n = unsafe {
                let mut mh: libc::msghdr = std::mem::zeroed();
                mh.msg_iov = self.iov.as_mut_ptr();
                mh.msg_iovlen = self.iov.len() as _;
                libc::sendmsg(self.fd(), &mh, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(false),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(RpcError::Io(e)),
                }
            }
            let mut n = n as usize;
            while n > 0 {
                let len = match self.segs[self.sent_seg] {
                    Seg::Own(a, b) => b - a,
                    Seg::User(_, l) => l,
                };
                let rem = len - self.sent_off;
                if n >= rem {
                    n -= rem;
                    self.sent_seg += 1;
                    self.sent_off = 0;
                } else {
                    self.sent_off += n;
                    n = 0;
                }
            }
        }
        self.tx.clear();
        self.segs.clear();
        self.sent_seg = 0;
        self.sent_off = 0;
        Ok(true)
    }

    /// Read and dispatch every reply the socket holds, without blocking.
    /// `f(tag, reply)` is called once per reply to a call of ours.
    pub fn receive(
        &mut self,
        f: &mut dyn FnMut(u64, Result<Body<'_>, RpcError>),
    ) -> Result<(), RpcError> {
        loop {
            self.process(f)?;
            if self.rd == self.wr {
                self.rd = 0;
                self.wr = 0;
            } else if self.rx.len() - self.wr < RX_MIN_ROOM {
                self.rx.copy_within(self.rd..self.wr, 0);
                self.wr -= self.rd;
                self.rd = 0;
            }
            let direct = match self.st {
                St::Direct { dst, left, .. } if self.rd == self.wr && self.in_frag => {
                    Some((dst, left.min(self.frag_left)))
                }
                _ => None,
            };
            let n = match direct {
                Some((dst, want)) => {
                    let iov = [
                        libc::iovec {
                            iov_base: dst as *mut libc::c_void,
                            iov_len: want,
                        },
                        libc::iovec {
                            iov_base: self.rx[self.wr..].as_mut_ptr() as *mut libc::c_void,
                            iov_len: self.rx.len() - self.wr,
                        },
                    ];
                    // SAFETY: dst has `left >= want` bytes reserved for this
                    // reply (start's contract); the second iovec is our buffer.
                    let n = unsafe { libc::readv(self.fd(), iov.as_ptr(), 2) };
                    if n < 0 {
                        Err(io::Error::last_os_error())
                    } else {
                        Ok(n as usize)
                    }
                }
                None => (&self.stream).read(&mut self.rx[self.wr..]),
            };
            let n = match n {
                Ok(0) => return Err(RpcError::Closed),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(RpcError::Io(e)),
            };
            match direct {
                Some((_, want)) => {
                    let k = n.min(want);
                    self.st.landed(k);
                    self.frag_left -= k;
                    self.wr += n - k;
                    self.frag_done(f)?;
                }
                None => self.wr += n,
            }
        }
    }

    /// After consuming fragment bytes: close the fragment and record if done.
    fn frag_done(
        &mut self,
        f: &mut dyn FnMut(u64, Result<Body<'_>, RpcError>),
    ) -> Result<(), RpcError> {
        if self.in_frag && self.frag_left == 0 {
            self.in_frag = false;
            if self.last {
                self.end_record(f)?;
            }
        }
        Ok(())
    }

    /// Consume the receive buffer.
    fn process(
        &mut self,
        f: &mut dyn FnMut(u64, Result<Body<'_>, RpcError>),
    ) -> Result<(), RpcError> {
        loop {
            if !self.in_frag {
                if self.wr - self.rd < 4 {
                    return Ok(());
                }
                let h = u32::from_be_bytes(self.rx[self.rd..self.rd + 4].try_into().unwrap());
                self.rd += 4;
                self.in_frag = true;
                self.frag_left = (h & !LAST_FRAGMENT) as usize;
                self.last = h & LAST_FRAGMENT != 0;
            }
            if self.frag_left > 0 {
                let avail = (self.wr - self.rd).min(self.frag_left);
                if avail == 0 {
                    return Ok(());
                }
                let used = match &mut self.st {
                    St::Collect => {
                        let n = if self.collect_all {
                            avail
                        } else {
                            avail.min(HEAD_STEP)
                        };
                        if self.msg.len() + n > MAX_COLLECT {
                            return Err(RpcError::Protocol(format!(
                                "a reply record of {} bytes or more, larger than any reply \
                                 to storlab's calls (at most {MAX_COLLECT} bytes besides READ data)",
                                self.msg.len() + self.frag_left
                            )));
                        }
                        self.msg.extend_from_slice(&self.rx[self.rd..self.rd + n]);
                        n
                    }
                    St::Direct { dst, left, .. } => {
                        let n = avail.min(*left);
                        // SAFETY: dst has `left` bytes reserved for this reply.
                        unsafe {
                            std::ptr::copy_nonoverlapping(self.rx[self.rd..].as_ptr(), *dst, n)
                        };
                        self.st.landed(n);
                        n
                    }
                    St::Skip { .. } | St::Discard => avail,
                };
                self.rd += used;
                self.frag_left -= used;
                if matches!(self.st, St::Collect) && !self.collect_all {
                    self.try_head()?;
                }
            }
            self.frag_done(f)?;
        }
    }

    /// Look up the pending call of a reply XID.
    fn lookup(&self, xid: u32) -> Option<usize> {
        let idx = (xid & 0xffff) as usize;
        match self.pend.get(idx) {
            Some(p) if p.live && p.xid == xid => Some(idx),
            _ => None,
        }
    }

    fn release(&mut self, idx: usize) -> u64 {
        self.pend[idx].live = false;
        self.free.push(idx);
        self.outstanding -= 1;
        self.pend[idx].tag
    }

    /// With part of a reply collected: decide where its data goes.
    fn try_head(&mut self) -> Result<(), RpcError> {
        let (xid, body) = match parse_reply(&self.msg) {
            Err(Short) => return Ok(()),
            Ok(r) => r,
        };
        let Some(idx) = self.lookup(xid) else {
            self.count_stray(xid);
            self.msg.clear();
            self.st = St::Discard;
            return Ok(());
        };
        let p = self.pend[idx];
        let body = match body {
            Ok(b) if !p.dst.is_null() => b,
            _ => {
                self.collect_all = true;
                return Ok(());
            }
        };
        match (self.read_head)(&self.msg[body..]) {
            Head::More => {}
            Head::NoData => self.collect_all = true,
            Head::Data { len, count } => {
                if count > p.dst_len {
                    return Err(RpcError::Protocol(format!(
                        "{count} bytes of READ data for a {}-byte read",
                        p.dst_len
                    )));
                }
                let start = body + len;
                let have = (self.msg.len() - start).min(count as usize);
                // SAFETY: dst has dst_len >= count bytes reserved for this reply.
                unsafe { std::ptr::copy_nonoverlapping(self.msg[start..].as_ptr(), p.dst, have) };
                self.msg.truncate(start);
                let left = count as usize - have;
                self.st = if left > 0 {
                    St::Direct {
                        idx,
                        dst: p.dst.wrapping_add(have),
                        left,
                        count,
                        body,
                    }
                } else {
                    St::Skip { idx, count, body }
                };
            }
        }
        Ok(())
    }

    /// A whole reply record has arrived.
    fn end_record(
        &mut self,
        f: &mut dyn FnMut(u64, Result<Body<'_>, RpcError>),
    ) -> Result<(), RpcError> {
        let st = std::mem::replace(&mut self.st, St::Collect);
        self.collect_all = false;
        match st {
            St::Collect => {
                let (xid, body) = parse_reply(&self.msg)
                    .map_err(|_| RpcError::Protocol("truncated reply header".into()))?;
                match self.lookup(xid) {
                    Some(idx) => {
                        let tag = self.release(idx);
                        f(
                            tag,
                            body.map(|b| Body {
                                body: &self.msg[b..],
                                data: None,
                            }),
                        );
                    }
                    None => self.count_stray(xid),
                }
            }
            St::Skip { idx, count, body } => {
                let tag = self.release(idx);
                f(
                    tag,
                    Ok(Body {
                        body: &self.msg[body..],
                        data: Some(count),
                    }),
                );
            }
            St::Direct { .. } => {
                return Err(RpcError::Protocol("reply ends inside READ data".into()));
            }
            St::Discard => {}
        }
        self.msg.clear();
        Ok(())
    }

    /// Wait up to `timeout` for the socket to become readable (or writable
    /// while calls wait to be sent).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<(), RpcError> {
        let mut fds = [libc::pollfd {
            fd: self.fd(),
            events: poll_events(self.wants_write()),
            revents: 0,
        }];
        poll(&mut fds, timeout)?;
        Ok(())
    }

    /// One call, waiting up to `timeout` for its reply; returns the result body.
    /// Meant for set-up and tear-down, when nothing else is in flight.
    pub fn call(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        timeout: Duration,
        args: impl FnOnce(&mut Enc),
    ) -> Result<Vec<u8>, RpcError> {
        // SAFETY: no caller memory is handed over (no payload, no destination).
        unsafe { self.start(prog, vers, proc_, SYNC_TAG, None, None, args) };
        let deadline = Instant::now() + timeout;
        let mut result = None;
        loop {
            self.flush()?;
            self.receive(&mut |tag, r| {
                if tag == SYNC_TAG {
                    result = Some(r.map(|b| b.body.to_vec()));
                }
            })?;
            if let Some(r) = result.take() {
                return r;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RpcError::Timeout(timeout));
            }
            self.wait(Some(left))?;
        }
    }
}

/// poll(2) events for a connection.
pub fn poll_events(write: bool) -> i16 {
    if write {
        libc::POLLIN | libc::POLLOUT
    } else {
        libc::POLLIN
    }
}

/// poll(2) with an optional timeout (rounded up to whole milliseconds).
pub fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
    };
    // SAFETY: fds is a valid, exclusively borrowed array of pollfd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// Read one call record (single fragment) from a blocking stream.
    fn read_call(s: &mut TcpStream) -> Vec<u8> {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let h = u32::from_be_bytes(h);
        assert!(h & LAST_FRAGMENT != 0, "calls are one fragment");
        let mut body = vec![0; (h & !LAST_FRAGMENT) as usize];
        s.read_exact(&mut body).unwrap();
        body
    }

    /// An accepted reply header for `xid`.
    fn reply_head(xid: u32) -> Vec<u8> {
        let mut b = Vec::new();
        Enc::new(&mut b)
            .u32(xid)
            .u32(REPLY)
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(0);
        b
    }

    /// Send `rec` split into fragments at the given cut points.
    fn send_fragments(s: &mut TcpStream, rec: &[u8], cuts: &[usize]) {
        let mut out = Vec::new();
        let mut at = 0;
        for (i, &c) in cuts.iter().chain([rec.len()].iter()).enumerate() {
            let last = i == cuts.len();
            let len = (c - at) as u32 | if last { LAST_FRAGMENT } else { 0 };
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&rec[at..c]);
            at = c;
        }
        // Byte by byte for the first record: exercises every boundary.
        for chunk in out.chunks(7) {
            s.write_all(chunk).unwrap();
        }
    }

    /// A toy READ reply: status, count, data.
    fn toy_head(b: &[u8]) -> Head {
        let mut d = Dec::new(b);
        let Ok(status) = d.u32() else {
            return Head::More;
        };
        if status != 0 {
            return Head::NoData;
        }
        match d.u32() {
            Ok(count) => Head::Data { len: 8, count },
            Err(_) => Head::More,
        }
    }

    /// A connection to a loopback listener, and the listener's end of it.
    fn connected() -> (Conn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let c = Conn::connect("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        (c, l.accept().unwrap().0)
    }

    #[test]
    fn call_encoding_and_framing() {
        let (mut c, mut s) = connected();
        let payload = *b"hello";
        // SAFETY: `payload` outlives the connection.
        let xid = unsafe {
            c.start(NFS_PROG, 3, 7, 1, None, Some((payload.as_ptr(), 5)), |e| {
                e.u32(42).u32(5);
            })
        };
        assert!(c.wants_write());
        assert!(c.flush().unwrap());
        let body = read_call(&mut s);
        let mut d = Dec::new(&body);
        assert_eq!(d.u32().unwrap(), xid);
        assert_eq!(d.u32().unwrap(), CALL);
        assert_eq!(d.u32().unwrap(), 2);
        assert_eq!(d.u32().unwrap(), NFS_PROG);
        assert_eq!(d.u32().unwrap(), 3);
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.u32().unwrap(), AUTH_SYS);
        let cred = d.opaque().unwrap();
        let mut cd = Dec::new(cred);
        cd.u32().unwrap();
        assert_eq!(cd.string().unwrap(), "storlab");
        assert_eq!((cd.u32(), cd.u32(), cd.u32()), (Ok(0), Ok(0), Ok(0)));
        assert_eq!((d.u32(), d.u32()), (Ok(AUTH_NONE), Ok(0)));
        assert_eq!((d.u32(), d.u32()), (Ok(42), Ok(5)));
        assert_eq!(d.fixed(5).unwrap(), b"hello");
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn replies_out_of_order_fragmented_and_direct() {
        let (mut c, mut s) = connected();
        c.set_read_head(toy_head);
        let mut bufs = vec![vec![0u8; 3000]; 3];
        let mut xids = Vec::new();
        for (i, b) in bufs.iter_mut().enumerate() {
            let dst = Some((b.as_mut_ptr(), 3000u32));
            // SAFETY: `bufs` outlives the connection and is read only after
            // every reply has been delivered.
            xids.push(unsafe {
                c.start(NFS_PROG, 3, 6, i as u64, dst, None, |e| {
                    e.u32(i as u32);
                })
            });
        }
        // A call without a destination, answered with a plain body.
        // SAFETY: no caller memory is handed over.
        xids.push(unsafe { c.start(NFS_PROG, 3, 1, 3, None, None, |_| {}) });
        assert!(c.flush().unwrap());
        let server = std::thread::spawn(move || {
            for _ in 0..4 {
                read_call(&mut s);
            }
            // Reply 2 first, split into fragments inside header and data.
            let data: Vec<u8> = (0..2999u32).map(|i| (i * 7) as u8).collect();
            let mut r = reply_head(xids[2]);
            Enc::new(&mut r).u32(0).opaque(&data);
            send_fragments(&mut s, &r, &[3, 30, 100, 2000]);
            // A stray reply to no call: ignored.
            let stray = reply_head(0xdead_0000);
            send_fragments(&mut s, &stray, &[]);
            // Reply 0: an error status (no data).
            let mut r = reply_head(xids[0]);
            Enc::new(&mut r).u32(5);
            send_fragments(&mut s, &r, &[]);
            // Reply 3: a plain body; reply 1: rejected (program unavailable).
            let mut r = reply_head(xids[3]);
            Enc::new(&mut r).u32(0).u32(77);
            send_fragments(&mut s, &r, &[10]);
            let mut r = Vec::new();
            Enc::new(&mut r)
                .u32(xids[1])
                .u32(REPLY)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(1);
            send_fragments(&mut s, &r, &[]);
            s
        });
        let mut got: Vec<(u64, String)> = Vec::new();
        while c.outstanding() > 0 {
            c.wait(Some(Duration::from_secs(5))).unwrap();
            c.receive(&mut |tag, r| {
                let text = match r {
                    Ok(b) => format!("{:?} {:?}", b.data, b.body),
                    Err(e) => e.to_string(),
                };
                got.push((tag, text));
            })
            .unwrap();
        }
        let _s = server.join().unwrap();
        assert_eq!(
            got,
            vec![
                (2, "Some(2999) [0, 0, 0, 0, 0, 0, 11, 183]".to_string()),
                (0, "None [0, 0, 0, 5]".to_string()),
                (3, "None [0, 0, 0, 0, 0, 0, 0, 77]".to_string()),
                (1, "call rejected: program unavailable".to_string()),
            ]
        );
        let want: Vec<u8> = (0..2999u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(&bufs[2][..2999], &want[..]);
        assert_eq!(bufs[2][2999], 0, "nothing written past the data");
        assert!(bufs[0].iter().all(|&b| b == 0));
    }

    #[test]
    fn large_direct_read_and_closed_connection() {
        let (mut c, mut s) = connected();
        c.set_read_head(toy_head);
        let n = 3 << 20;
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` outlives the connection and is read only after the
        // reply has been delivered.
        unsafe {
            c.start(
                NFS_PROG,
                3,
                6,
                9,
                Some((buf.as_mut_ptr(), n as u32)),
                None,
                |_| {},
            )
        };
        c.flush().unwrap();
        let server = std::thread::spawn(move || {
            let call = read_call(&mut s);
            let xid = u32::from_be_bytes(call[..4].try_into().unwrap());
            let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let mut r = reply_head(xid);
            Enc::new(&mut r).u32(0).opaque(&data);
            let len = (r.len() as u32 | LAST_FRAGMENT).to_be_bytes();
            s.write_all(&len).unwrap();
            s.write_all(&r).unwrap();
            drop(s);
        });
        let mut done = None;
        let err = loop {
            c.wait(Some(Duration::from_secs(5))).unwrap();
            if let Err(e) = c.receive(&mut |tag, r| done = Some((tag, r.unwrap().data))) {
                break e;
            }
        };
        server.join().unwrap();
        assert_eq!(done, Some((9, Some(n as u32))));
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        assert!(matches!(err, RpcError::Closed), "{err}");
    }
}
