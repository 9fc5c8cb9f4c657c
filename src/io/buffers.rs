//! Aligned I/O buffers, one per slot, in one allocation, and the lease
//! ([`IoBuf`]) through which a request names its slot's buffer.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fmt;
use std::ptr::NonNull;

/// Alignment of every buffer: enough for O_DIRECT on 4Kn devices.
pub const BUF_ALIGN: usize = 4096;

/// A pool of `count` buffers of `size` bytes each, each aligned to [`BUF_ALIGN`].
/// The pool never moves its memory, so addresses into it stay valid for its life.
pub struct BufferPool {
    base: NonNull<u8>,
    layout: Layout,
    stride: usize,
    count: usize,
    size: usize,
}

// SAFETY: the pool is plain memory it owns alone; moving it to another thread
// moves that ownership (the leases it gave out go with the Lane that holds it).
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Allocate `count` zeroed buffers of `size` bytes.
    pub fn new(count: usize, size: usize) -> Self {
        let stride = size.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let total = (stride * count.max(1)).max(BUF_ALIGN);
        let layout = Layout::from_size_align(total, BUF_ALIGN).expect("buffer pool layout");
        // SAFETY: layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        let Some(base) = NonNull::new(base) else {
            panic!("out of memory allocating {total} bytes of I/O buffers")
        };
        BufferPool {
            base,
            layout,
            stride,
            count,
            size,
        }
    }

    /// Number of buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Usable size of each buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of buffer `slot`, for registering the pool with the kernel
    /// (io_uring fixed buffers). It is not a lease: nothing is read or
    /// written through it.
    pub(crate) fn addr(&self, slot: usize) -> NonNull<u8> {
        assert!(
            slot < self.count,
            "buffer slot {slot} out of {}",
            self.count
        );
        // SAFETY: slot < count, so the offset stays inside the allocation.
        unsafe { self.base.add(slot * self.stride) }
    }

    /// Buffer `slot` as a mutable slice. `&mut self` means no lease of it is
    /// live: [`super::Lane`], the only holder of leases, checks the slot is not
    /// in flight before it hands out the pool.
    pub fn slice_mut(&mut self, slot: usize) -> &mut [u8] {
        let p = self.addr(slot);
        // SAFETY: the buffer is `size` bytes inside our allocation, and `&mut self`
        // guarantees no other slice of it exists.
        unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.size) }
    }

    /// Buffer `slot` as a slice.
    pub fn slice(&self, slot: usize) -> &[u8] {
        let p = self.addr(slot);
        // SAFETY: as in slice_mut, shared.
        unsafe { std::slice::from_raw_parts(p.as_ptr(), self.size) }
    }

    /// Lease the first `len` bytes of buffer `slot` to one request.
    ///
    /// # Safety
    /// From this call until the backend the request is queued to has returned
    /// the request's completion from `reap` (or refused it in `queue`), or has
    /// been dropped after [`super::Backend::retire`] returned true:
    /// * the pool is not dropped (moving it is fine: its memory does not
    ///   move); a pool whose backend's `retire` returned false is never freed;
    /// * no one else reads or writes buffer `slot`: no slice of it exists and
    ///   it is not leased again.
    ///
    /// Panics when `slot` or `len` is out of range.
    pub(crate) unsafe fn lend(&self, slot: usize, len: u32) -> IoBuf {
        assert!(
            len as usize <= self.size,
            "a {len}-byte request in a {}-byte buffer",
            self.size
        );
        IoBuf {
            ptr: self.addr(slot),
            len,
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: base was allocated with this layout.
        unsafe { dealloc(self.base.as_ptr(), self.layout) }
    }
}

/// One request's lease of its buffer: `len` bytes that stay valid, and that
/// nothing but the backend holding the request reads or writes, from `queue`
/// until the backend returns the request's completion from `reap` (or until it
/// is dropped: see the safety section of [`super::Backend`]).
///
/// Leases are made only by [`super::Lane`] (through an unsafe constructor
/// whose contract the lane keeps), so safe code cannot name memory it does not
/// own; [`IoBuf::empty`] is the one lease anyone may make, of no bytes. A lease
/// is neither `Copy` nor `Clone`: one request, one buffer.
pub struct IoBuf {
    ptr: NonNull<u8>,
    len: u32,
}

// SAFETY: a lease is the exclusive right to `len` bytes for one request, which
// the engine hands to its backend; the bytes do not depend on the thread.
unsafe impl Send for IoBuf {}

impl IoBuf {
    /// A lease of no bytes (a request that moves nothing, a placeholder).
    pub fn empty() -> IoBuf {
        IoBuf {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// Bytes leased.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the lease has no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start of the leased bytes, for the backends' FFI: valid for `len`
    /// bytes while the lease lasts (see the type's docs).
    #[inline]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Start of the leased bytes, writable (reads land here): as [`IoBuf::as_ptr`].
    #[inline]
    pub(crate) fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IoBuf({} bytes)", self.len)
    }
}
