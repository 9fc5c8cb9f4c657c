//! Safe wrappers of the system calls the file system makes. Every FFI call of
//! the FUSE server is here, each behind a function that owns or borrows what
//! the kernel touches; failures are the raw errno, which the server passes back
//! to the kernel unchanged.

use super::abi;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// An errno value (positive), as the backing file system gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's errno.
    pub fn last() -> Errno {
        Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

/// The result of a system call.
pub type Sys<T> = Result<T, Errno>;

/// `r` as a result: negative means errno.
fn check(r: libc::c_long) -> Sys<libc::c_long> {
    if r < 0 { Err(Errno::last()) } else { Ok(r) }
}

/// A name or path as a C string; an interior NUL is EINVAL.
fn cstr(b: &[u8]) -> Sys<CString> {
    CString::new(b).map_err(|_| Errno(libc::EINVAL))
}

/// Wrap a file descriptor a call just returned.
fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: `fd` was just returned by the kernel for this process and is
    // owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// CLOCK_MONOTONIC in ns: the clock every [`crate::media::Medium`] is asked on.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// This thread's id (what FUSE request headers carry as `pid`).
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// open(2) of an absolute path.
pub fn open(path: &[u8], flags: i32, mode: u32) -> Sys<OwnedFd> {
    let p = cstr(path)?;
    // SAFETY: a valid C string; the returned fd is wrapped at once.
    check(unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode) } as _).map(owned)
}

/// openat(2) of `name` in directory `dir`.
pub fn openat(dir: BorrowedFd, name: &[u8], flags: i32, mode: u32) -> Sys<OwnedFd> {
    let n = cstr(name)?;
    // SAFETY: a valid fd and C string; the returned fd is wrapped at once.
    check(unsafe { libc::openat(dir.as_raw_fd(), n.as_ptr(), flags | libc::O_CLOEXEC, mode) } as _)
        .map(owned)
}

/// The path that reopens `fd` (an O_PATH descriptor) with other flags.
pub fn proc_path(fd: BorrowedFd) -> Vec<u8> {
    format!("/proc/self/fd/{}", fd.as_raw_fd()).into_bytes()
}

/// Open the file `fd` (often O_PATH) refers to again, with `flags`.
pub fn reopen(fd: BorrowedFd, flags: i32) -> Sys<OwnedFd> {
    open(&proc_path(fd), flags & !libc::O_NOFOLLOW, 0)
}

/// fstat(2) of any descriptor, O_PATH included.
pub fn fstat(fd: BorrowedFd) -> Sys<libc::stat> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, empty C string with AT_EMPTY_PATH, our out-buffer.
    check(unsafe {
        libc::fstatat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            &mut st,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    } as _)?;
    Ok(st)
}

/// pread(2) into all of `buf` or until end of file; returns the bytes read.
pub fn pread_full(fd: BorrowedFd, buf: &mut [u8], offset: u64) -> Sys<usize> {
    // SAFETY: the pointer and length describe `buf`, which we borrow mutably.
    unsafe { pread_to(fd, buf.as_mut_ptr(), buf.len(), offset) }
}

/// pread(2) of up to `len` bytes at `offset`, appended to `buf` (no bytes
/// are zeroed first: the kernel writes them, and only what it wrote is
/// kept); reads until `len` bytes or end of file, and returns the bytes
/// appended. An error before any byte is returned; after some, the bytes read.
pub fn pread_append(fd: BorrowedFd, buf: &mut Vec<u8>, len: usize, offset: u64) -> Sys<usize> {
    buf.reserve(len);
    let rest = &mut buf.spare_capacity_mut()[..len];
    // SAFETY: the pointer and length describe `rest`, spare capacity of `buf`
    // that we borrow mutably.
    let n = unsafe { pread_to(fd, rest.as_mut_ptr().cast(), len, offset) }?;
    // SAFETY: the kernel initialised `n` bytes (n <= len) right after the
    // current end, within the capacity reserved above.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// pread(2) of `len` bytes at `offset` to `dst`, again after EINTR and
/// after short reads, until `len` bytes or end of file; returns the bytes
/// read (written from `dst` on). An error before any byte is returned; after
/// some, the bytes read.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes for the whole call.
unsafe fn pread_to(fd: BorrowedFd, dst: *mut u8, len: usize, offset: u64) -> Sys<usize> {
    let mut done = 0;
    while done < len {
        // SAFETY: `done < len`, so `dst + done` and the `len - done` bytes
        // after it are within what the caller lets us write.
        let n = unsafe {
            libc::pread(
                fd.as_raw_fd(),
                dst.add(done).cast(),
                len - done,
                (offset + done as u64) as libc::off_t,
            )
        };
        match n {
            0 => break,
            n if n > 0 => done += n as usize,
            _ => {
                let e = Errno::last();
                if e.0 == libc::EINTR {
                    continue;
                }
                if done == 0 {
                    return Err(e);
                }
                break;
            }
        }
    }
    Ok(done)
}

/// pwrite(2) of all of `data`; a failure after some bytes returns the bytes
/// written (a short write, as a local file system gives), one before any
/// returns the error.
pub fn pwrite_full(fd: BorrowedFd, data: &[u8], offset: u64) -> Sys<usize> {
    let mut done = 0;
    while done < data.len() {
        let rest = &data[done..];
        // SAFETY: the pointer and length describe `rest`, which we borrow.
        let n = unsafe {
            libc::pwrite(
                fd.as_raw_fd(),
                rest.as_ptr().cast(),
                rest.len(),
                (offset + done as u64) as libc::off_t,
            )
        };
        if n > 0 {
            done += n as usize;
            continue;
        }
        let e = Errno::last();
        if n < 0 && e.0 == libc::EINTR {
            continue;
        }
        if done == 0 {
            return Err(if n == 0 { Errno(libc::EIO) } else { e });
        }
        break;
    }
    Ok(done)
}

/// fsync(2), or fdatasync(2) when `data_only`.
pub fn fsync(fd: BorrowedFd, data_only: bool) -> Sys<()> {
    // SAFETY: plain calls on a valid fd.
    let r = unsafe {
        if data_only {
            libc::fdatasync(fd.as_raw_fd())
        } else {
            libc::fsync(fd.as_raw_fd())
        }
    };
    check(r as _).map(drop)
}

/// ftruncate(2).
pub fn ftruncate(fd: BorrowedFd, size: u64) -> Sys<()> {
    // SAFETY: plain call on a valid fd.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } as _).map(drop)
}

/// truncate(2) of a path.
pub fn truncate(path: &[u8], size: u64) -> Sys<()> {
    let p = cstr(path)?;
    // SAFETY: a valid C string.
    check(unsafe { libc::truncate(p.as_ptr(), size as libc::off_t) } as _).map(drop)
}

/// chmod(2) of a path.
pub fn chmod(path: &[u8], mode: u32) -> Sys<()> {
    let p = cstr(path)?;
    // SAFETY: a valid C string.
    check(unsafe { libc::chmod(p.as_ptr(), mode) } as _).map(drop)
}

/// fchownat(2) of the file `fd` refers to; u32::MAX leaves an id unchanged.
pub fn fchown(fd: BorrowedFd, uid: u32, gid: u32) -> Sys<()> {
    // SAFETY: valid fd, empty C string with AT_EMPTY_PATH.
    check(unsafe {
        libc::fchownat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    } as _)
    .map(drop)
}

/// utimensat(2) of a path; `times` as utimensat takes them (UTIME_OMIT, UTIME_NOW).
pub fn utimens(path: &[u8], times: [libc::timespec; 2]) -> Sys<()> {
    let p = cstr(path)?;
    // SAFETY: a valid C string and two timespecs we own.
    check(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), times.as_ptr(), 0) } as _).map(drop)
}

/// access(2) of a path.
pub fn access(path: &[u8], mask: i32) -> Sys<()> {
    let p = cstr(path)?;
    // SAFETY: a valid C string.
    check(unsafe { libc::access(p.as_ptr(), mask) } as _).map(drop)
}

/// mkdirat(2).
pub fn mkdirat(dir: BorrowedFd, name: &[u8], mode: u32) -> Sys<()> {
    let n = cstr(name)?;
    // SAFETY: valid fd and C string.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), n.as_ptr(), mode) } as _).map(drop)
}

/// unlinkat(2); `flags` 0 or AT_REMOVEDIR.
pub fn unlinkat(dir: BorrowedFd, name: &[u8], flags: i32) -> Sys<()> {
    let n = cstr(name)?;
    // SAFETY: valid fd and C string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), n.as_ptr(), flags) } as _).map(drop)
}

/// renameat2(2).
pub fn renameat2(
    olddir: BorrowedFd,
    old: &[u8],
    newdir: BorrowedFd,
    new: &[u8],
    flags: u32,
) -> Sys<()> {
    let (o, n) = (cstr(old)?, cstr(new)?);
    // SAFETY: valid fds and C strings.
    check(unsafe {
        libc::renameat2(
            olddir.as_raw_fd(),
            o.as_ptr(),
            newdir.as_raw_fd(),
            n.as_ptr(),
            flags,
        )
    } as _)
    .map(drop)
}

/// fstatvfs(2).
pub fn fstatvfs(fd: BorrowedFd) -> Sys<libc::statvfs> {
    // SAFETY: an all-zero statvfs is a valid out-buffer.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and our out-buffer.
    check(unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) } as _)?;
    Ok(st)
}

/// fallocate(2).
pub fn fallocate(fd: BorrowedFd, mode: i32, offset: u64, len: u64) -> Sys<()> {
    // SAFETY: plain call on a valid fd.
    check(unsafe {
        libc::fallocate(
            fd.as_raw_fd(),
            mode,
            offset as libc::off_t,
            len as libc::off_t,
        )
    } as _)
    .map(drop)
}

/// lseek(2).
pub fn lseek(fd: BorrowedFd, offset: u64, whence: i32) -> Sys<u64> {
    // SAFETY: plain call on a valid fd.
    let r = unsafe { libc::lseek(fd.as_raw_fd(), offset as libc::off_t, whence) };
    check(r as _).map(|r| r as u64)
}

/// One entry of a directory, as getdents64(2) gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Inode number.
    pub ino: u64,
    /// The cookie that continues the listing after this entry.
    pub off: u64,
    /// `DT_*` type.
    pub typ: u8,
    /// Name.
    pub name: Vec<u8>,
}

/// getdents64(2) once: the entries that fit in `buf` (empty at the end).
pub fn getdents(fd: BorrowedFd, buf: &mut [u8]) -> Sys<Vec<DirEntry>> {
    // SAFETY: the kernel writes at most buf.len() bytes into buf.
    let n = check(unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    })? as usize;
    let mut out = Vec::new();
    let mut at = 0;
    // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
    while at + 19 <= n {
        let b = &buf[at..n];
        let ino = u64::from_ne_bytes(b[0..8].try_into().unwrap_or_default());
        let off = u64::from_ne_bytes(b[8..16].try_into().unwrap_or_default());
        let reclen = u16::from_ne_bytes([b[16], b[17]]) as usize;
        if reclen < 19 || reclen > b.len() {
            break;
        }
        let name = &b[19..reclen];
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        out.push(DirEntry {
            ino,
            off,
            typ: b[18],
            name: name[..end].to_vec(),
        });
        at += reclen;
    }
    Ok(out)
}

/// A backing file system's handle of a file (name_to_handle_at(2)): names
/// the file for as long as it exists, whatever it is renamed to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileHandle {
    /// `handle_type`.
    pub typ: i32,
    /// `f_handle`.
    pub bytes: Vec<u8>,
}

/// Room for the handle bytes (MAX_HANDLE_SZ).
const MAX_HANDLE_SZ: usize = 128;

/// `struct file_handle` with room for the largest handle.
#[repr(C)]
struct RawHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; MAX_HANDLE_SZ],
}

/// The handle of the file `fd` refers to.
pub fn name_to_handle(fd: BorrowedFd) -> Sys<FileHandle> {
    let mut h = RawHandle {
        handle_bytes: MAX_HANDLE_SZ as u32,
        handle_type: 0,
        f_handle: [0; MAX_HANDLE_SZ],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: valid fd, empty C string with AT_EMPTY_PATH, a handle buffer
    // whose handle_bytes says how much room f_handle has, and an int.
    check(unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            fd.as_raw_fd(),
            c"".as_ptr(),
            &mut h as *mut RawHandle,
            &mut mount_id as *mut libc::c_int,
            libc::AT_EMPTY_PATH,
        )
    })?;
    let len = (h.handle_bytes as usize).min(MAX_HANDLE_SZ);
    Ok(FileHandle {
        typ: h.handle_type,
        bytes: h.f_handle[..len].to_vec(),
    })
}

/// open_by_handle_at(2): the file `handle` names on the file system of
/// `mount` (not an O_PATH descriptor: the kernel ignores those here), if it
/// still exists (else ESTALE). Needs CAP_DAC_READ_SEARCH.
pub fn open_by_handle(mount: BorrowedFd, handle: &FileHandle, flags: i32) -> Sys<OwnedFd> {
    let mut h = RawHandle {
        handle_bytes: handle.bytes.len().min(MAX_HANDLE_SZ) as u32,
        handle_type: handle.typ,
        f_handle: [0; MAX_HANDLE_SZ],
    };
    let n = h.handle_bytes as usize;
    h.f_handle[..n].copy_from_slice(&handle.bytes[..n]);
    // SAFETY: valid fd and a handle buffer we own; the result is wrapped at once.
    check(unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount.as_raw_fd(),
            &mut h as *mut RawHandle,
            flags | libc::O_CLOEXEC,
        )
    })
    .map(owned)
}

/// read(2) once.
pub fn read(fd: BorrowedFd, buf: &mut [u8]) -> Sys<usize> {
    // SAFETY: the kernel writes at most buf.len() bytes into buf.
    check(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } as _)
        .map(|n| n as usize)
}

/// write(2) once.
pub fn write(fd: BorrowedFd, buf: &[u8]) -> Sys<usize> {
    // SAFETY: the kernel reads at most buf.len() bytes from buf.
    check(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) } as _)
        .map(|n| n as usize)
}

/// ioctl(2) on /dev/fuse with a pointer argument to `arg`; returns the result.
///
/// # Safety
/// `request` must be an ioctl whose argument is one `T` (the size its number
/// encodes), which the kernel reads or writes only during the call.
unsafe fn ioctl<T>(fd: BorrowedFd, request: libc::c_ulong, arg: &mut T) -> Sys<i32> {
    // SAFETY: `arg` is a live, exclusively borrowed T, the argument `request`
    // takes (the caller's contract).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), request, arg as *mut T) } as _).map(|r| r as i32)
}

/// FUSE_DEV_IOC_CLONE: attach the fresh /dev/fuse descriptor `fd` to the
/// connection of descriptor `src`.
pub fn dev_clone(fd: BorrowedFd, src: RawFd) -> Sys<i32> {
    let mut src = src as u32;
    // SAFETY: the request's argument is one u32 (`_IOR(229, 0, u32)`).
    unsafe { ioctl(fd, abi::DEV_IOC_CLONE, &mut src) }
}

/// FUSE_DEV_IOC_BACKING_OPEN: register `backing` for passthrough on the
/// connection `fd`; returns its backing id.
pub fn backing_open(fd: BorrowedFd, backing: RawFd) -> Sys<i32> {
    let mut map = abi::BackingMap {
        fd: backing,
        ..Default::default()
    };
    // SAFETY: the request's argument is one struct fuse_backing_map
    // (`_IOW(229, 1, ...)`, 16 bytes), which BackingMap is.
    unsafe { ioctl(fd, abi::DEV_IOC_BACKING_OPEN, &mut map) }
}

/// FUSE_DEV_IOC_BACKING_CLOSE: drop backing id `id` on the connection `fd`.
pub fn backing_close(fd: BorrowedFd, id: i32) -> Sys<i32> {
    let mut id = id as u32;
    // SAFETY: the request's argument is one u32 (`_IOW(229, 2, u32)`).
    unsafe { ioctl(fd, abi::DEV_IOC_BACKING_CLOSE, &mut id) }
}

/// mount(2).
pub fn mount(
    source: &str,
    target: &[u8],
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Sys<()> {
    let (s, t, f, d) = (
        cstr(source.as_bytes())?,
        cstr(target)?,
        cstr(fstype.as_bytes())?,
        cstr(data.as_bytes())?,
    );
    // SAFETY: valid C strings.
    check(unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) } as _)
        .map(drop)
}

/// umount2(2).
pub fn umount2(target: &[u8], flags: i32) -> Sys<()> {
    let t = cstr(target)?;
    // SAFETY: a valid C string.
    check(unsafe { libc::umount2(t.as_ptr(), flags) } as _).map(drop)
}

/// Let this thread's timed sleeps wake within `ns` of their deadline (the
/// default slack is 50 µs, as much as an SSD's whole service time).
pub fn set_timer_slack(ns: u64) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Make the calling thread real-time (SCHED_FIFO at priority `prio`), so
/// that ordinary work on the machine does not delay it; false if refused (no
/// CAP_SYS_NICE, or an RT budget of 0 in this cgroup).
pub fn set_realtime(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler(0, ...) reads one sched_param we own and
    // changes only the calling thread's policy.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::path::PathBuf;

    /// A fresh directory for `tag` holding one file `f` of `data`:
    /// (the directory, the file).
    fn dir_with_file(tag: &str, data: &[u8]) -> (PathBuf, PathBuf) {
        let dir = crate::workload::testing::temp_dir(tag);
        let f = dir.join("f");
        std::fs::write(&f, data).unwrap();
        (dir, f)
    }

    #[test]
    fn handles_reopen_a_file_until_it_is_gone() {
        let (dir, f) = dir_with_file("sys", b"abc");
        let root = open(dir.as_os_str().as_encoded_bytes(), libc::O_RDONLY, 0).unwrap();
        let fd = openat(root.as_fd(), b"f", libc::O_PATH, 0).unwrap();
        let h = name_to_handle(fd.as_fd()).unwrap();
        let again = open_by_handle(root.as_fd(), &h, libc::O_RDONLY).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(pread_full(again.as_fd(), &mut buf, 1).unwrap(), 2);
        assert_eq!(&buf[..2], b"bc");
        drop((fd, again));
        std::fs::remove_file(&f).unwrap();
        assert_eq!(
            open_by_handle(root.as_fd(), &h, libc::O_PATH).err(),
            Some(Errno(libc::ESTALE))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pread_append_keeps_what_was_there_and_only_the_bytes_read() {
        let (dir, f) = dir_with_file("pread-append", b"0123456789");
        let fd = open(f.as_os_str().as_encoded_bytes(), libc::O_RDONLY, 0).unwrap();
        let mut buf = b"hdr".to_vec();
        assert_eq!(pread_append(fd.as_fd(), &mut buf, 4, 2).unwrap(), 4);
        assert_eq!(buf, b"hdr2345");
        // Past the end of file: short, only the bytes there.
        assert_eq!(pread_append(fd.as_fd(), &mut buf, 100, 8).unwrap(), 2);
        assert_eq!(buf, b"hdr234589");
        assert_eq!(pread_append(fd.as_fd(), &mut buf, 4, 50).unwrap(), 0);
        assert_eq!(buf.len(), 9);
        // An error before any byte is the error, and nothing is appended.
        let w = open(f.as_os_str().as_encoded_bytes(), libc::O_WRONLY, 0).unwrap();
        assert_eq!(
            pread_append(w.as_fd(), &mut buf, 4, 0),
            Err(Errno(libc::EBADF))
        );
        assert_eq!(buf.len(), 9);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn getdents_lists_names_with_cookies() {
        let dir = crate::workload::testing::temp_dir("dents");
        std::fs::write(dir.join("one"), b"").unwrap();
        let fd = open(
            dir.as_os_str().as_encoded_bytes(),
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        )
        .unwrap();
        let mut buf = vec![0u8; 4096];
        let names: Vec<Vec<u8>> = getdents(fd.as_fd(), &mut buf)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.contains(&b"one".to_vec()) && names.contains(&b"..".to_vec()));
        assert!(getdents(fd.as_fd(), &mut buf).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
