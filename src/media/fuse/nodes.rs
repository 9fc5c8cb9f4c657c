//! The node table: which backing file each FUSE node id stands for.
//!
//! A node the kernel knows (its lookup count is above zero) holds an O_PATH
//! descriptor of its backing file, so renames under it change nothing. Node
//! ids are never reused and a node's record outlives the kernel's interest in
//! it: after FORGET the descriptor is closed (a deleted file's space is given
//! back) but the backing file system's handle of the file is kept, so a LOOKUP
//! of "." on an old node id, which is how the kernel resolves an NFS file
//! handle it no longer has cached (`FUSE_EXPORT_SUPPORT`), reopens the file by
//! that handle, or answers ESTALE once the file is gone.

use super::sys::{self, Errno, FileHandle, Sys};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};

/// What identifies a backing file across lookups.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// Its file handle (includes the inode's generation: a new file that
    /// reuses an inode number is another key).
    Handle(FileHandle),
    /// Device and inode number, on a file system without file handles.
    Inode(u64, u64),
}

/// One node.
struct Node {
    /// O_PATH descriptor while the kernel holds lookups on the node.
    fd: Option<Arc<OwnedFd>>,
    /// Lookups the kernel holds.
    nlookup: u64,
    /// Open files of the node.
    opens: u32,
    /// How to find the file again after FORGET.
    key: Key,
}

/// Node ids and their backing files.
pub struct Nodes {
    /// The backing directory (node 1), O_PATH.
    root: Arc<OwnedFd>,
    /// The backing directory opened for reading: open_by_handle_at's
    /// reference to the file system (it takes no O_PATH descriptor).
    mount: OwnedFd,
    inner: Mutex<Inner>,
}

struct Inner {
    nodes: HashMap<u64, Node>,
    by_key: HashMap<Key, u64>,
    next: u64,
}

/// The key of the file `fd` refers to.
fn key_of(fd: &OwnedFd, st: &libc::stat) -> Key {
    match sys::name_to_handle(fd.as_fd()) {
        Ok(h) => Key::Handle(h),
        Err(_) => Key::Inode(st.st_dev, st.st_ino),
    }
}

impl Nodes {
    /// The table with the backing directory `root` (an O_PATH descriptor) as
    /// node [`super::abi::ROOT_ID`].
    pub fn new(root: OwnedFd) -> Sys<Nodes> {
        let st = sys::fstat(root.as_fd())?;
        let key = key_of(&root, &st);
        let mount = sys::reopen(root.as_fd(), libc::O_RDONLY | libc::O_DIRECTORY)?;
        let root = Arc::new(root);
        let mut nodes = HashMap::new();
        nodes.insert(
            super::abi::ROOT_ID,
            Node {
                fd: Some(root.clone()),
                nlookup: 1,
                opens: 0,
                key: key.clone(),
            },
        );
        Ok(Nodes {
            root,
            mount,
            inner: Mutex::new(Inner {
                nodes,
                by_key: HashMap::from([(key, super::abi::ROOT_ID)]),
                next: super::abi::ROOT_ID + 1,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The backing directory.
    pub fn root(&self) -> &Arc<OwnedFd> {
        &self.root
    }

    /// The O_PATH descriptor of `nodeid`'s file: the one held, or (for a node
    /// the kernel has forgotten) the file reopened by its handle. ESTALE for
    /// an unknown node or a file that no longer exists.
    pub fn fd(&self, nodeid: u64) -> Sys<Arc<OwnedFd>> {
        let key = {
            let inner = self.lock();
            let node = inner.nodes.get(&nodeid).ok_or(Errno(libc::ESTALE))?;
            if let Some(fd) = &node.fd {
                return Ok(fd.clone());
            }
            node.key.clone()
        };
        match key {
            Key::Handle(h) => sys::open_by_handle(self.mount.as_fd(), &h, libc::O_PATH)
                .map(Arc::new)
                .map_err(|e| {
                    if e.0 == libc::ENOENT {
                        Errno(libc::ESTALE)
                    } else {
                        e
                    }
                }),
            Key::Inode(..) => Err(Errno(libc::ESTALE)),
        }
    }

    /// Count one more kernel lookup of the file `fd` refers to: its existing
    /// node, or a new one. Returns the node id and the file's attributes.
    pub fn remember(&self, fd: Arc<OwnedFd>) -> Sys<(u64, libc::stat)> {
        let st = sys::fstat(fd.as_fd())?;
        let key = key_of(&fd, &st);
        let mut inner = self.lock();
        let id = match inner.by_key.get(&key) {
            Some(&id) => id,
            None => {
                let id = inner.next;
                inner.next += 1;
                inner.by_key.insert(key.clone(), id);
                inner.nodes.insert(
                    id,
                    Node {
                        fd: None,
                        nlookup: 0,
                        opens: 0,
                        key,
                    },
                );
                id
            }
        };
        if let Some(node) = inner.nodes.get_mut(&id) {
            node.nlookup += 1;
            if node.fd.is_none() {
                node.fd = Some(fd);
            }
        }
        Ok((id, st))
    }

    /// The kernel dropped `n` lookups of `nodeid`; at zero the descriptor is
    /// closed (the root's never is).
    pub fn forget(&self, nodeid: u64, n: u64) {
        if nodeid == super::abi::ROOT_ID {
            return;
        }
        let mut inner = self.lock();
        if let Some(node) = inner.nodes.get_mut(&nodeid) {
            node.nlookup = node.nlookup.saturating_sub(n);
            if node.nlookup == 0 {
                node.fd = None;
            }
        }
    }

    /// `nodeid`'s descriptor for a new open or a lookup by node id: ESTALE
    /// once its file is deleted (no links) and no open file holds it. Our own
    /// O_PATH descriptor keeps a deleted file's inode alive; without this, a
    /// file handle (NFS) would reach a file that a local file system would
    /// have freed, where the servers expect ESTALE.
    pub fn live_fd(&self, nodeid: u64) -> Sys<Arc<OwnedFd>> {
        let fd = self.fd(nodeid)?;
        if sys::fstat(fd.as_fd())?.st_nlink == 0 && self.opens(nodeid) == 0 {
            return Err(Errno(libc::ESTALE));
        }
        Ok(fd)
    }

    /// Open files of `nodeid`.
    fn opens(&self, nodeid: u64) -> u32 {
        self.lock().nodes.get(&nodeid).map_or(0, |n| n.opens)
    }

    /// Count an open file of `nodeid` (`delta` 1) or its release (-1).
    pub fn count_open(&self, nodeid: u64, delta: i32) {
        if let Some(n) = self.lock().nodes.get_mut(&nodeid) {
            n.opens = n.opens.saturating_add_signed(delta);
        }
    }

    /// Nodes holding a descriptor.
    #[cfg(test)]
    pub fn open_count(&self) -> usize {
        self.lock()
            .nodes
            .values()
            .filter(|n| n.fd.is_some())
            .count()
    }
}

/// A table of open handles (files or directories) by `fh`.
pub struct Handles<T> {
    map: std::sync::RwLock<HashMap<u64, Arc<T>>>,
    next: std::sync::atomic::AtomicU64,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles {
            map: Default::default(),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }
}

impl<T> Handles<T> {
    /// Keep `v`; returns its handle.
    pub fn insert(&self, v: T) -> u64 {
        let fh = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, Arc::new(v));
        fh
    }

    /// The handle's value; EBADF for an unknown handle.
    pub fn get(&self, fh: u64) -> Sys<Arc<T>> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh)
            .cloned()
            .ok_or(Errno(libc::EBADF))
    }

    /// Drop the handle; returns its value.
    pub fn remove(&self, fh: u64) -> Option<Arc<T>> {
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh)
    }

    /// Open handles.
    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forgotten_node_is_found_again_by_its_handle_until_deleted() {
        let dir = crate::workload::testing::temp_dir("nodes");
        std::fs::write(dir.join("f"), b"x").unwrap();
        let root = sys::open(dir.as_os_str().as_encoded_bytes(), libc::O_PATH, 0).unwrap();
        let nodes = Nodes::new(root).unwrap();
        let open = || Arc::new(sys::openat(nodes.root().as_fd(), b"f", libc::O_PATH, 0).unwrap());
        let (id, st) = nodes.remember(open()).unwrap();
        assert!(id > 1);
        assert_eq!(st.st_size, 1);
        assert_eq!(
            nodes.remember(open()).unwrap().0,
            id,
            "same file, same node"
        );
        assert_eq!(nodes.open_count(), 2);
        nodes.forget(id, 2);
        assert_eq!(nodes.open_count(), 1, "the descriptor is closed at zero");
        let again = nodes.fd(id).expect("reopened by handle");
        assert_eq!(sys::fstat(again.as_fd()).unwrap().st_ino, st.st_ino);
        drop(again);
        std::fs::remove_file(dir.join("f")).unwrap();
        assert_eq!(nodes.fd(id).err(), Some(Errno(libc::ESTALE)));
        assert_eq!(nodes.fd(999).err(), Some(Errno(libc::ESTALE)));
        // A new file of the same name is a new node.
        std::fs::write(dir.join("f"), b"y").unwrap();
        assert_ne!(nodes.remember(open()).unwrap().0, id);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
