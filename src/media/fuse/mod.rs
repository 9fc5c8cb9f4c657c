//! storlab's own FUSE server (no libfuse): a passthrough file system over the
//! lab's backing directory whose data operations complete at a
//! [`crate::media::Medium`]'s times. Every path to the lab's store goes
//! through it: the block baseline (a loop device with direct I/O on the FUSE
//! file), and nfs-ganesha, tgt and nbdkit opening the file in the mount.
//!
//! * `abi`: the wire structs of the kernel's `fuse.h` (protocol 7.40).
//! * `sys`: every system call, behind safe wrappers.
//! * `mount`: mount(2)/umount2(2) as root, and [`cleanup`] of a mount whose
//!   server died (abort the connection, detach).
//! * `session`: INIT, reader threads on cloned /dev/fuse descriptors, the
//!   timer thread; [`Server`].
//! * `fs`, `data`, `dir`: the operations; `nodes`: node ids ↔ backing files
//!   (O_PATH descriptors, file handles for NFS export); `reply`: replies and
//!   the timer queue that holds them to their due time; `calibrate`: the
//!   server's own round trip, measured at mount and charged against the
//!   medium's times so that clients see the medium's, not the medium's plus
//!   the server's.
//!
//! Errors from the backing file system (ENOSPC, EIO, ENOENT, ESTALE) are the
//! replies, unchanged. Writes are never cached in the kernel (no writeback
//! cache), so a full store fails the write that found it full.

mod abi;
mod calibrate;
mod data;
mod dir;
mod fs;
pub mod mount;
mod nodes;
mod reply;
mod session;
mod sys;

pub use fs::CacheMode;
pub use mount::cleanup;
pub use reply::Lead;
pub use session::{Options, Server};
pub use sys::now_ns;

#[cfg(test)]
mod tests;
