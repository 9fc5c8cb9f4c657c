//! A FUSE media server over a small store, for tests that need storage whose
//! timing a medium decides (and that a test may pause with SIGSTOP).

use std::fs;
use std::path::{Path, PathBuf};
use storlab::media::serve::{MediaServer, cleanup};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_storlab"))
}

/// A backing directory with a 16 MiB store file, a mount point and a log,
/// under /dev/shm. On drop, every media server started through it is
/// stopped by PID (a test that panics leaves none running), whatever is
/// mounted at the mount point is cleaned up, and the directory removed.
pub struct Dirs(pub PathBuf, std::cell::RefCell<Vec<MediaServer>>);

impl Dirs {
    pub fn new(tag: &str) -> Dirs {
        super::assert_root("the media server tests need root (mount(2), /dev/fuse)");
        let d = PathBuf::from(format!(
            "/dev/shm/storlab-media-{tag}-{}",
            std::process::id()
        ));
        let _ = cleanup(&d.join("mnt"));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("back")).unwrap();
        fs::create_dir_all(d.join("mnt")).unwrap();
        let data: Vec<u8> = (0..16u32 << 20).map(|i| (i % 251) as u8).collect();
        fs::write(d.join("back/disk.img"), data).unwrap();
        Dirs(d, Default::default())
    }
    pub fn back(&self) -> PathBuf {
        self.0.join("back")
    }
    /// The store file in the backing directory.
    pub fn store(&self) -> PathBuf {
        self.back().join("disk.img")
    }
    pub fn mnt(&self) -> PathBuf {
        self.0.join("mnt")
    }
    pub fn log(&self) -> PathBuf {
        self.0.join("media.log")
    }
    pub fn start(&self, media: &str) -> MediaServer {
        self.start_from(media, None)
    }
    /// [`Dirs::start`] with a preset of the user's preset file `file`.
    pub fn start_from(&self, media: &str, file: Option<&Path>) -> MediaServer {
        MediaServer::start_with(
            bin(),
            &self.store(),
            &self.mnt(),
            media,
            file,
            None,
            &self.log(),
        )
        .inspect(|s| self.1.borrow_mut().push(s.clone()))
        .unwrap_or_else(|e| panic!("start: {e}"))
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        // Stopping a server that already stopped does nothing (PID and start
        // time are checked).
        for s in self.1.borrow().iter() {
            let _ = s.stop();
        }
        let _ = cleanup(&self.mnt());
        let _ = fs::remove_dir_all(&self.0);
    }
}
