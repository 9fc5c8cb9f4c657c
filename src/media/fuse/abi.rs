//! The FUSE wire protocol: the kernel's `include/uapi/linux/fuse.h` (protocol
//! 7.40) written as Rust structs, only the parts this file system speaks.
//!
//! Every struct here is `#[repr(C)]` with explicit padding fields and only
//! integer fields, so any byte pattern is a valid value and a value has no
//! uninitialised bytes: [`Pod`] reads them out of a request and writes them
//! into a reply as plain bytes.

/// The protocol's major version.
pub const KERNEL_VERSION: u32 = 7;
/// The minor version we speak (7.40: passthrough and `backing_id`).
pub const KERNEL_MINOR_VERSION: u32 = 40;
/// The root directory's node id.
pub const ROOT_ID: u64 = 1;

/// Request opcodes (`enum fuse_opcode`).
#[allow(missing_docs)]
pub mod op {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const RENAME: u32 = 12;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
    pub const RENAME2: u32 = 45;
    pub const LSEEK: u32 = 46;
}

/// INIT flags (`flags`, and `flags2` shifted down 32 bits).
#[allow(missing_docs)]
pub mod init {
    pub const ASYNC_READ: u64 = 1 << 0;
    pub const ATOMIC_O_TRUNC: u64 = 1 << 3;
    pub const EXPORT_SUPPORT: u64 = 1 << 4;
    pub const BIG_WRITES: u64 = 1 << 5;
    pub const ASYNC_DIO: u64 = 1 << 15;
    pub const PARALLEL_DIROPS: u64 = 1 << 18;
    pub const MAX_PAGES: u64 = 1 << 22;
    pub const INIT_EXT: u64 = 1 << 30;
    pub const DIRECT_IO_ALLOW_MMAP: u64 = 1 << 36;
    pub const PASSTHROUGH: u64 = 1 << 37;
}

/// OPEN reply flags (`FOPEN_*`).
#[allow(missing_docs)]
pub mod fopen {
    pub const DIRECT_IO: u32 = 1 << 0;
    pub const KEEP_CACHE: u32 = 1 << 1;
    pub const PARALLEL_DIRECT_WRITES: u32 = 1 << 6;
    pub const PASSTHROUGH: u32 = 1 << 7;
}

/// SETATTR `valid` bits (`FATTR_*`).
#[allow(missing_docs)]
pub mod fattr {
    pub const MODE: u32 = 1 << 0;
    pub const UID: u32 = 1 << 1;
    pub const GID: u32 = 1 << 2;
    pub const SIZE: u32 = 1 << 3;
    pub const ATIME: u32 = 1 << 4;
    pub const MTIME: u32 = 1 << 5;
    pub const FH: u32 = 1 << 6;
    pub const ATIME_NOW: u32 = 1 << 7;
    pub const MTIME_NOW: u32 = 1 << 8;
}

/// FSYNC flag: data only (fdatasync).
pub const FSYNC_FDATASYNC: u32 = 1;

/// `ioctl(2)` numbers on /dev/fuse: `_IOR(229, 0, u32)` and
/// `_IOW(229, 1, struct fuse_backing_map)`, `_IOW(229, 2, u32)`.
pub const DEV_IOC_CLONE: libc::c_ulong = 0x8004_e500;
/// Register a backing file for passthrough; returns its id.
pub const DEV_IOC_BACKING_OPEN: libc::c_ulong = 0x4010_e501;
/// Drop a backing file id.
pub const DEV_IOC_BACKING_CLOSE: libc::c_ulong = 0x4004_e502;

/// A plain-old-data wire struct: `#[repr(C)]`, integer fields only, no
/// implicit padding.
///
/// # Safety
/// Implement only for types of which every byte pattern is a valid value and
/// which have no padding bytes.
pub unsafe trait Pod: Copy + Default {
    /// Read one from the start of `b`, if it is long enough.
    fn read(b: &[u8]) -> Option<Self> {
        if b.len() < size_of::<Self>() {
            return None;
        }
        // SAFETY: the length was checked; any bytes are a valid Self (trait
        // contract); read_unaligned needs no alignment.
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Self) })
    }

    /// Its bytes, as they go on the wire.
    fn bytes(&self) -> &[u8] {
        // SAFETY: Self has no padding (trait contract), so all its
        // size_of bytes are initialised; the slice borrows self.
        unsafe { std::slice::from_raw_parts(self as *const Self as *const u8, size_of::<Self>()) }
    }
}

/// Declares wire structs, implements [`Pod`] for each and checks its size
/// against the C header at compile time.
macro_rules! wire {
    ($( $(#[$m:meta])* struct $name:ident [$size:expr] { $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)? } )*) => {
        $(
            $(#[$m])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
            #[allow(missing_docs)]
            pub struct $name { $( $(#[$fm])* pub $field: $ty ),* }
            // SAFETY: repr(C), integer (or integer-array) fields only, and the
            // size check below proves there is no implicit padding.
            unsafe impl Pod for $name {}
            const _: () = assert!(size_of::<$name>() == $size);
        )*
    };
}

wire! {
    /// Header of every request.
    struct InHeader [40] {
        len: u32, opcode: u32, unique: u64, nodeid: u64,
        uid: u32, gid: u32, pid: u32, total_extlen: u16, padding: u16,
    }
    /// Header of every reply.
    struct OutHeader [16] { len: u32, error: i32, unique: u64 }
    /// Attributes of a node (`struct fuse_attr`).
    struct Attr [88] {
        ino: u64, size: u64, blocks: u64, atime: u64, mtime: u64, ctime: u64,
        atimensec: u32, mtimensec: u32, ctimensec: u32, mode: u32, nlink: u32,
        uid: u32, gid: u32, rdev: u32, blksize: u32, flags: u32,
    }
    /// Reply to LOOKUP, MKDIR, CREATE (first part).
    struct EntryOut [128] {
        nodeid: u64, generation: u64, entry_valid: u64, attr_valid: u64,
        entry_valid_nsec: u32, attr_valid_nsec: u32, attr: Attr,
    }
    /// Reply to GETATTR and SETATTR.
    struct AttrOut [104] { attr_valid: u64, attr_valid_nsec: u32, dummy: u32, attr: Attr }
    /// FORGET.
    struct ForgetIn [8] { nlookup: u64 }
    /// BATCH_FORGET header; `count` [`ForgetOne`]s follow.
    struct BatchForgetIn [8] { count: u32, dummy: u32 }
    /// One node of a BATCH_FORGET.
    struct ForgetOne [16] { nodeid: u64, nlookup: u64 }
    /// GETATTR.
    struct GetattrIn [16] { getattr_flags: u32, dummy: u32, fh: u64 }
    /// SETATTR.
    struct SetattrIn [88] {
        valid: u32, padding: u32, fh: u64, size: u64, lock_owner: u64,
        atime: u64, mtime: u64, ctime: u64, atimensec: u32, mtimensec: u32,
        ctimensec: u32, mode: u32, unused4: u32, uid: u32, gid: u32, unused5: u32,
    }
    /// MKDIR; the name follows.
    struct MkdirIn [8] { mode: u32, umask: u32 }
    /// RENAME; the old and the new name follow.
    struct RenameIn [8] { newdir: u64 }
    /// RENAME2; the old and the new name follow.
    struct Rename2In [16] { newdir: u64, flags: u32, padding: u32 }
    /// OPEN and OPENDIR.
    struct OpenIn [8] { flags: u32, open_flags: u32 }
    /// CREATE; the name follows.
    struct CreateIn [16] { flags: u32, mode: u32, umask: u32, open_flags: u32 }
    /// Reply to OPEN, OPENDIR and (second part) CREATE.
    struct OpenOut [16] { fh: u64, open_flags: u32, backing_id: i32 }
    /// RELEASE and RELEASEDIR.
    struct ReleaseIn [24] { fh: u64, flags: u32, release_flags: u32, lock_owner: u64 }
    /// FLUSH.
    struct FlushIn [24] { fh: u64, unused: u32, padding: u32, lock_owner: u64 }
    /// READ and READDIR.
    struct ReadIn [40] {
        fh: u64, offset: u64, size: u32, read_flags: u32, lock_owner: u64,
        flags: u32, padding: u32,
    }
    /// WRITE; the data follows.
    struct WriteIn [40] {
        fh: u64, offset: u64, size: u32, write_flags: u32, lock_owner: u64,
        flags: u32, padding: u32,
    }
    /// Reply to WRITE.
    struct WriteOut [8] { size: u32, padding: u32 }
    /// Reply to STATFS (`struct fuse_kstatfs`).
    struct StatfsOut [80] {
        blocks: u64, bfree: u64, bavail: u64, files: u64, ffree: u64,
        bsize: u32, namelen: u32, frsize: u32, padding: u32, spare: [u32; 6],
    }
    /// FSYNC and FSYNCDIR.
    struct FsyncIn [16] { fh: u64, fsync_flags: u32, padding: u32 }
    /// ACCESS.
    struct AccessIn [8] { mask: u32, padding: u32 }
    /// INIT request.
    struct InitIn [64] {
        major: u32, minor: u32, max_readahead: u32, flags: u32, flags2: u32,
        unused: [u32; 11],
    }
    /// INIT reply.
    struct InitOut [64] {
        major: u32, minor: u32, max_readahead: u32, flags: u32,
        max_background: u16, congestion_threshold: u16, max_write: u32,
        time_gran: u32, max_pages: u16, map_alignment: u16, flags2: u32,
        max_stack_depth: u32, unused: [u32; 6],
    }
    /// INTERRUPT.
    struct InterruptIn [8] { unique: u64 }
    /// FALLOCATE.
    struct FallocateIn [32] { fh: u64, offset: u64, length: u64, mode: u32, padding: u32 }
    /// LSEEK.
    struct LseekIn [24] { fh: u64, offset: u64, whence: u32, padding: u32 }
    /// Reply to LSEEK.
    struct LseekOut [8] { offset: u64 }
    /// A directory entry of a READDIR reply; the name follows, padded to 8.
    struct Dirent [24] { ino: u64, off: u64, namelen: u32, typ: u32 }
    /// Argument of `FUSE_DEV_IOC_BACKING_OPEN`.
    struct BackingMap [16] { fd: i32, flags: u32, padding: u64 }
}

/// A request's arguments after the header, taken in order.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a>(pub &'a [u8]);

impl<'a> Args<'a> {
    /// The next struct.
    pub fn take<T: Pod>(&mut self) -> Option<T> {
        let v = T::read(self.0)?;
        self.0 = &self.0[size_of::<T>()..];
        Some(v)
    }

    /// The next NUL-terminated name (without its NUL).
    pub fn name(&mut self) -> Option<&'a [u8]> {
        let end = self.0.iter().position(|&b| b == 0)?;
        let name = &self.0[..end];
        self.0 = &self.0[end + 1..];
        Some(name)
    }

    /// Whatever is left (WRITE's data).
    pub fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// The bytes of a READDIR record: a [`Dirent`] then the name, padded with
/// zeros to a multiple of 8.
pub fn dirent_len(namelen: usize) -> usize {
    (size_of::<Dirent>() + namelen).next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_round_trip_through_their_bytes() {
        let h = InHeader {
            len: 56,
            opcode: op::LOOKUP,
            unique: 7,
            nodeid: ROOT_ID,
            uid: 1,
            gid: 2,
            pid: 3,
            ..Default::default()
        };
        assert_eq!(InHeader::read(h.bytes()), Some(h));
        assert_eq!(InHeader::read(&h.bytes()[..39]), None);
        // Little-endian layout as the C header has it: len first, then opcode.
        assert_eq!(&h.bytes()[..8], &[56, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn args_take_structs_names_and_the_rest() {
        let mut b = MkdirIn {
            mode: 0o755,
            umask: 0o22,
        }
        .bytes()
        .to_vec();
        b.extend_from_slice(b"dir\0tail");
        let mut a = Args(&b);
        assert_eq!(a.take::<MkdirIn>().unwrap().mode, 0o755);
        assert_eq!(a.name(), Some(&b"dir"[..]));
        assert_eq!(a.rest(), b"tail");
        assert_eq!(Args(b"no-nul").name(), None);
    }

    #[test]
    fn ioctl_numbers_match_the_header_macros() {
        // _IOC(dir, type, nr, size) = dir << 30 | size << 16 | type << 8 | nr
        let ioc = |dir: libc::c_ulong, nr: libc::c_ulong, size: libc::c_ulong| {
            dir << 30 | size << 16 | 229 << 8 | nr
        };
        assert_eq!(DEV_IOC_CLONE, ioc(2, 0, 4));
        assert_eq!(DEV_IOC_BACKING_OPEN, ioc(1, 1, 16));
        assert_eq!(DEV_IOC_BACKING_CLOSE, ioc(1, 2, 4));
        assert_eq!(dirent_len(1), 32);
        assert_eq!(dirent_len(8), 32);
        assert_eq!(dirent_len(9), 40);
    }
}
