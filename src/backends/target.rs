//! Target URLs: where a run sends its I/O.
//!
//! `file:PATH` is a directory (storlab creates one file per VM disk in it), a
//! regular file, or a block device; kernel-attached storage of any protocol (FC,
//! FCoE, a kernel iSCSI LUN, an NFS mount, NVMe-oF) is reached this way through
//! its device or mount path. `null:` completes every I/O at once.

use std::fmt;
use std::path::PathBuf;

/// The schemes a target may use, for error messages.
pub const ALLOWED_SCHEMES: &str = "file:PATH, null:";

/// A parsed target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The null backend: no storage, the engine's own ceiling.
    Null,
    /// A local path: directory, regular file or block device, through io_uring.
    File(PathBuf),
}

/// A target string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    /// What the user typed.
    pub input: String,
    /// Why it is wrong.
    pub reason: String,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid target {:?}: {} (allowed: {ALLOWED_SCHEMES})",
            self.input, self.reason
        )
    }
}

impl std::error::Error for TargetError {}

impl Target {
    /// Parse `file:PATH`, `file://PATH` or `null:`.
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        let err = |reason: &str| TargetError {
            input: s.to_string(),
            reason: reason.to_string(),
        };
        let Some((scheme, rest)) = s.split_once(':') else {
            return Err(err("no scheme"));
        };
        match scheme {
            "null" => {
                if rest.is_empty() || rest == "//" {
                    Ok(Target::Null)
                } else {
                    Err(err("null: takes no path"))
                }
            }
            "file" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                if path.is_empty() {
                    return Err(err("file: needs a path"));
                }
                if path.contains('\0') {
                    return Err(err("path contains a NUL byte"));
                }
                Ok(Target::File(PathBuf::from(path)))
            }
            "" => Err(err("empty scheme")),
            other => Err(err(&format!("unknown scheme {other:?}"))),
        }
    }

    /// The backend that serves this target.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Target::Null => "null",
            Target::File(_) => "file",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Null => write!(f, "null:"),
            Target::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_and_null() {
        assert_eq!(Target::parse("null:").unwrap(), Target::Null);
        assert_eq!(
            Target::parse("file:/tmp/x").unwrap(),
            Target::File("/tmp/x".into())
        );
        assert_eq!(
            Target::parse("file:///tmp/x").unwrap(),
            Target::File("/tmp/x".into())
        );
        assert_eq!(
            Target::parse("file:rel/dir").unwrap(),
            Target::File("rel/dir".into())
        );
    }

    #[test]
    fn errors_name_input_and_allowed_schemes() {
        for bad in ["/tmp/x", "nfs3:/x", "file:", "null:/x", ":x"] {
            let e = Target::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
            assert!(e.contains("allowed: file:PATH, null:"), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["null:", "file:/a/b"] {
            assert_eq!(Target::parse(s).unwrap().to_string(), s);
        }
    }
}
