//! The agent's allow list: the only targets it will touch. A path entry
//! covers everything under it once both are canonicalized (symlinks
//! resolved), so a link inside an allowed directory cannot lead out of it; a
//! URL entry (`nfs://`, `iscsi://`, `nbd://`, `null:`) covers URLs that
//! start with it at a component boundary.

use crate::target::Target;
use std::path::{Component, Path, PathBuf};

/// The targets an agent may touch.
#[derive(Clone, Debug, Default)]
pub struct Allowlist {
    paths: Vec<PathBuf>,
    urls: Vec<String>,
}

impl Allowlist {
    /// Build from `--allow` entries: paths (which must exist) or URL prefixes.
    pub fn new(entries: &[String]) -> Result<Allowlist, String> {
        let mut out = Allowlist::default();
        for e in entries {
            let path = e.strip_prefix("file:").unwrap_or(e);
            if path.starts_with('/') {
                let c = std::fs::canonicalize(path)
                    .map_err(|err| format!("--allow {e}: cannot resolve {path}: {err}"))?;
                out.paths.push(c);
            } else if e.contains(':') {
                out.urls.push(e.clone());
            } else {
                return Err(format!(
                    "--allow {e}: not an absolute path or a target URL prefix \
                     (allowed: /DIR, file:/DIR, null:, nfs://HOST/EXPORT, iscsi://HOST/IQN, nbd://HOST)"
                ));
            }
        }
        Ok(out)
    }

    /// Whether `target` may be used; the error names the target and why.
    pub fn check_target(&self, target: &Target) -> Result<(), String> {
        match target {
            Target::File(p) | Target::Fc { path: p, .. } => self.check_path(p),
            other => {
                let url = other.to_string();
                if self.urls.iter().any(|a| url_covers(a, &url)) {
                    Ok(())
                } else {
                    Err(format!("target {url} is not under any --allow entry"))
                }
            }
        }
    }

    /// Whether `path` (existing or about to be created) is under an allowed
    /// path, symlinks resolved.
    /// A relative path or one with a `..` component is refused outright,
    /// before anything is resolved.
    pub fn check_path(&self, path: &Path) -> Result<(), String> {
        if !path.is_absolute() {
            return Err(format!(
                "target file:{} is not an absolute path (an agent takes absolute paths only)",
                path.display()
            ));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "target file:{} contains a .. component (path traversal refused)",
                path.display()
            ));
        }
        let resolved = resolve(path)
            .map_err(|e| format!("target file:{} cannot be resolved: {e}", path.display()))?;
        if self.paths.iter().any(|a| resolved.starts_with(a)) {
            Ok(())
        } else if resolved != path {
            Err(format!(
                "target file:{} (resolves to {}) is not under any --allow path",
                path.display(),
                resolved.display()
            ))
        } else {
            Err(format!(
                "target file:{} is not under any --allow path",
                path.display()
            ))
        }
    }
}

/// Canonicalize `path`; a file that does not exist yet is resolved through
/// its parent directory.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(e);
            };
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            Ok(std::fs::canonicalize(parent)?.join(name))
        }
        Err(e) => Err(e),
    }
}

/// `allow` covers `url` when it is a prefix ending at a boundary.
fn url_covers(allow: &str, url: &str) -> bool {
    let Some(rest) = url.strip_prefix(allow) else {
        return false;
    };
    rest.is_empty() || allow.ends_with(['/', ':']) || rest.starts_with(['/', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_symlinks_before_the_check() {
        let base = std::env::temp_dir().join(format!("storlab-allow-{}", std::process::id()));
        let ok = base.join("ok");
        let other = base.join("other");
        std::fs::create_dir_all(&ok).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let link = ok.join("escape");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&other, &link).unwrap();
        let a = Allowlist::new(&[ok.display().to_string(), "null:".into()]).unwrap();
        assert!(a.check_target(&Target::File(ok.join("new.dat"))).is_ok());
        assert!(a.check_target(&Target::File(ok.clone())).is_ok());
        let e = a
            .check_target(&Target::File(link.join("x.dat")))
            .unwrap_err();
        assert!(e.contains("resolves to") && e.contains("other"), "{e}");
        let e = a.check_target(&Target::File(other.clone())).unwrap_err();
        assert!(e.contains(&other.display().to_string()), "{e}");
        let e = a
            .check_target(&Target::File(ok.join("../other/y")))
            .unwrap_err();
        assert!(e.contains(".. component"), "{e}");
        let e = a
            .check_target(&Target::File(ok.join("sub/../new.dat")))
            .unwrap_err();
        assert!(e.contains(".. component"), "{e}");
        let e = a
            .check_target(&Target::File("relative/x.dat".into()))
            .unwrap_err();
        assert!(e.contains("not an absolute path"), "{e}");
        assert!(a.check_target(&Target::Null).is_ok());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn urls_match_at_a_boundary() {
        assert!(url_covers("nfs://10.0.0.1", "nfs://10.0.0.1/export/f"));
        assert!(!url_covers("nfs://10.0.0.1", "nfs://10.0.0.10/export/f"));
        assert!(url_covers("nbd://", "nbd://h:10809/x"));
        assert!(url_covers("null:", "null:"));
        let a = Allowlist::new(&["nfs://10.0.0.1/export".into()]).unwrap();
        let t = Target::parse("null:").unwrap();
        assert!(a.check_target(&t).unwrap_err().contains("null:"));
        assert!(Allowlist::new(&["relative/dir".into()]).is_err());
    }
}
