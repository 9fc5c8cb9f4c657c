//! File operations on a local directory ([`FileOps`] for `file:DIR`
//! targets): plain system calls through std, as a program would make them,
//! so the page cache is in the path (a close does not fsync; `sync` does).

use crate::backends::file::errno_text;
use crate::io::fsops::{Attr, FileOps, FsError, Handle, OpenMode};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A local directory's files.
pub struct DirOps {
    root: PathBuf,
    open: HashMap<u64, File>,
    next: u64,
}

impl DirOps {
    /// Operations under `root`, which must be a directory.
    pub fn open(root: &Path) -> Result<DirOps, String> {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => Ok(DirOps {
                root: root.to_path_buf(),
                open: HashMap::new(),
                next: 0,
            }),
            Ok(_) => Err(format!("{} is not a directory", root.display())),
            Err(e) => Err(format!("cannot use {}: {}", root.display(), errno_text(&e))),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        if p.is_empty() {
            self.root.clone()
        } else {
            self.root.join(p)
        }
    }

    fn err(&self, what: &str, p: &str, e: io::Error) -> FsError {
        FsError::new(
            e.raw_os_error().unwrap_or(libc::EIO),
            format!("{what} {}: {}", self.path(p).display(), errno_text(&e)),
        )
    }

    fn file(&self, h: &Handle) -> Result<&File, FsError> {
        self.open
            .get(&h.0)
            .ok_or_else(|| FsError::new(libc::EBADF, format!("no open file {}", h.0)))
    }
}

impl FileOps for DirOps {
    fn describe(&self) -> String {
        format!("local directory {}", self.root.display())
    }

    fn mkdir(&mut self, p: &str) -> Result<(), FsError> {
        fs::create_dir(self.path(p)).map_err(|e| self.err("mkdir", p, e))
    }

    fn rmdir(&mut self, p: &str) -> Result<(), FsError> {
        fs::remove_dir(self.path(p)).map_err(|e| self.err("rmdir", p, e))
    }

    fn open(&mut self, p: &str, mode: OpenMode) -> Result<Handle, FsError> {
        let mut o = fs::OpenOptions::new();
        match mode {
            OpenMode::Create => o.read(true).write(true).create_new(true).mode(0o644),
            OpenMode::Write => o.read(true).write(true),
            OpenMode::Read => o.read(true),
        };
        let f = o.open(self.path(p)).map_err(|e| self.err("open", p, e))?;
        self.next += 1;
        self.open.insert(self.next, f);
        Ok(Handle(self.next))
    }

    fn write_at(&mut self, h: &Handle, offset: u64, data: &[u8]) -> Result<(), FsError> {
        self.file(h)?.write_all_at(data, offset).map_err(|e| {
            FsError::new(
                e.raw_os_error().unwrap_or(libc::EIO),
                format!("write: {}", errno_text(&e)),
            )
        })
    }

    fn read_at(&mut self, h: &Handle, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        let f = self.file(h)?;
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(FsError::new(
                        e.raw_os_error().unwrap_or(libc::EIO),
                        format!("read: {}", errno_text(&e)),
                    ));
                }
            }
        }
        Ok(got)
    }

    fn sync(&mut self, h: &Handle) -> Result<(), FsError> {
        self.file(h)?.sync_all().map_err(|e| {
            FsError::new(
                e.raw_os_error().unwrap_or(libc::EIO),
                format!("fsync: {}", errno_text(&e)),
            )
        })
    }

    fn close(&mut self, h: Handle) -> Result<(), FsError> {
        self.open.remove(&h.0);
        Ok(())
    }

    fn drop_cache(&mut self, p: &str) -> Result<(), FsError> {
        let f = File::open(self.path(p)).map_err(|e| self.err("open", p, e))?;
        // SAFETY: posix_fadvise only reads its integer arguments; the
        // descriptor is open (owned by `f`) for the whole call.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(self.err("posix_fadvise", p, io::Error::from_raw_os_error(r)));
        }
        Ok(())
    }

    fn stat(&mut self, p: &str) -> Result<Attr, FsError> {
        let m = fs::symlink_metadata(self.path(p)).map_err(|e| self.err("stat", p, e))?;
        Ok(Attr {
            dir: m.is_dir(),
            size: m.len(),
        })
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        // rename(2) replaces an existing target; storlab never does.
        if fs::symlink_metadata(self.path(to)).is_ok() {
            return Err(FsError::new(
                libc::EEXIST,
                format!("rename to {}: it exists", self.path(to).display()),
            ));
        }
        fs::rename(self.path(from), self.path(to)).map_err(|e| self.err("rename", from, e))
    }

    fn remove(&mut self, p: &str) -> Result<(), FsError> {
        fs::remove_file(self.path(p)).map_err(|e| self.err("remove", p, e))
    }

    fn list(&mut self, p: &str) -> Result<Vec<String>, FsError> {
        let rd = fs::read_dir(self.path(p)).map_err(|e| self.err("list", p, e))?;
        rd.map(|e| {
            e.map(|e| e.file_name().to_string_lossy().into_owned())
                .map_err(|e| self.err("list", p, e))
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_on_a_temporary_directory() {
        let root = crate::workload::testing::temp_dir("dirops");
        let mut d = DirOps::open(&root).unwrap();
        d.mkdir("a").unwrap();
        assert_eq!(d.mkdir("a").unwrap_err().errno, libc::EEXIST);
        let h = d.open("a/f", OpenMode::Create).unwrap();
        d.write_at(&h, 0, b"hello").unwrap();
        d.sync(&h).unwrap();
        d.close(h).unwrap();
        assert_eq!(
            d.open("a/f", OpenMode::Create).unwrap_err().errno,
            libc::EEXIST
        );
        assert_eq!(
            d.stat("a/f").unwrap(),
            Attr {
                dir: false,
                size: 5
            }
        );
        assert!(d.stat("a").unwrap().dir);
        d.drop_cache("a/f").unwrap();
        let h = d.open("a/f", OpenMode::Read).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(d.read_at(&h, 0, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        d.close(h).unwrap();
        d.open("a/g", OpenMode::Create)
            .map(|h| d.close(h))
            .unwrap()
            .unwrap();
        assert_eq!(d.rename("a/f", "a/g").unwrap_err().errno, libc::EEXIST);
        d.rename("a/f", "a/h").unwrap();
        let mut names = d.list("a").unwrap();
        names.sort();
        assert_eq!(names, ["g", "h"]);
        d.remove("a/g").unwrap();
        d.remove("a/h").unwrap();
        let e = d.stat("a/h").unwrap_err();
        assert_eq!(e.errno, libc::ENOENT);
        assert!(e.message.contains("a/h"), "{}", e.message);
        d.rmdir("a").unwrap();
        fs::remove_dir(&root).unwrap();
        assert!(DirOps::open(&root).is_err());
    }
}
