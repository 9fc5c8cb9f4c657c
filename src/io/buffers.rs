//! Aligned I/O buffers, one per slot, in one allocation.

use std::alloc::{Layout, alloc_zeroed, dealloc};

/// Alignment of every buffer: enough for O_DIRECT on 4Kn devices.
pub const BUF_ALIGN: usize = 4096;

/// A pool of `count` buffers of `size` bytes each, each aligned to [`BUF_ALIGN`].
/// The pool never moves its memory, so pointers into it stay valid for its life.
pub struct BufferPool {
    base: *mut u8,
    layout: Layout,
    stride: usize,
    count: usize,
    size: usize,
}

// SAFETY: the pool is plain memory owned by one engine thread at a time; the
// engine hands out disjoint slot ranges.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Allocate `count` zeroed buffers of `size` bytes.
    pub fn new(count: usize, size: usize) -> Self {
        let stride = size.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let total = (stride * count.max(1)).max(BUF_ALIGN);
        let layout = Layout::from_size_align(total, BUF_ALIGN).expect("buffer pool layout");
        // SAFETY: layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(
            !base.is_null(),
            "out of memory allocating {total} bytes of I/O buffers"
        );
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

    /// Pointer to buffer `slot`.
    pub fn ptr(&self, slot: usize) -> *mut u8 {
        assert!(
            slot < self.count,
            "buffer slot {slot} out of {}",
            self.count
        );
        // SAFETY: slot < count, so the offset stays inside the allocation.
        unsafe { self.base.add(slot * self.stride) }
    }

    /// Buffer `slot` as a mutable slice (not while a request uses it).
    pub fn slice_mut(&mut self, slot: usize) -> &mut [u8] {
        let p = self.ptr(slot);
        // SAFETY: the buffer is `size` bytes inside our allocation, and `&mut self`
        // guarantees no other slice of it exists.
        unsafe { std::slice::from_raw_parts_mut(p, self.size) }
    }

    /// Buffer `slot` as a slice.
    pub fn slice(&self, slot: usize) -> &[u8] {
        let p = self.ptr(slot);
        // SAFETY: as in slice_mut, shared.
        unsafe { std::slice::from_raw_parts(p, self.size) }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: base was allocated with this layout.
        unsafe { dealloc(self.base, self.layout) }
    }
}
