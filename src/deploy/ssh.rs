//! The remote end of a deployment: a host reached with Debian's OpenSSH client
//! (`ssh`, non-interactive: `BatchMode=yes`, so a missing key or an unknown
//! host key fails at once instead of prompting), one fixed command per call,
//! every word of it single-quoted for the remote shell.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A host as `ssh` reaches it: `[USER@]HOST[:PORT]` (IPv6 as `[ADDR]:PORT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshHost {
    /// The text it was given as, for messages and the fleet's record.
    pub label: String,
    /// Login name; `None`: ssh's default (the config's `User`, else ours).
    pub user: Option<String>,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port; `None`: ssh's default (the config's `Port`, else 22).
    pub port: Option<u16>,
}

impl SshHost {
    /// Parse `[USER@]HOST[:PORT]`; the error names the entry and the form.
    pub fn parse(s: &str) -> Result<SshHost, String> {
        let bad = |why: &str| {
            format!(
                "invalid ssh host {s:?}: {why} (expected [USER@]HOST[:PORT], e.g. root@10.0.0.5:22)"
            )
        };
        let (user, rest) = match s.split_once('@') {
            Some((u, r)) => (Some(u), r),
            None => (None, s),
        };
        if let Some(u) = user
            && (u.is_empty()
                || !u
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)))
        {
            return Err(bad(
                "the user name may hold letters, digits, '.', '_' and '-' only",
            ));
        }
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (h, after) = inner
                .split_once(']')
                .ok_or_else(|| bad("an unclosed '['"))?;
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or_else(|| bad("text after ']'"))?),
                ),
            }
        } else if rest.matches(':').count() == 1 {
            let (h, p) = rest.split_once(':').expect("one colon");
            (h, Some(p))
        } else {
            (rest, None)
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| bad(&format!("port {p:?} is not 1..65535")))
            })
            .transpose()?;
        if host.is_empty() || host.starts_with('-') {
            return Err(bad("no host name"));
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:%".contains(c))
        {
            return Err(bad(
                "the host may hold letters, digits, '.', '-', '_' and ':' only",
            ));
        }
        Ok(SshHost {
            label: s.to_string(),
            user: user.map(String::from),
            host: host.to_string(),
            port,
        })
    }

    /// The destination argument of `ssh`.
    fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// How every `ssh` of a deployment is run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SshOptions {
    /// `ssh -F FILE`: a config file instead of ~/.ssh/config.
    pub config: Option<PathBuf>,
    /// `ssh -o KEY=VALUE` options, in order (IdentityFile=..., UserKnownHostsFile=...).
    pub options: Vec<String>,
}

/// Quote `word` for a POSIX shell: single quotes, each `'` as `'\''`.
pub fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// What one `ssh` call gave back.
#[derive(Debug)]
pub struct Output {
    /// The remote command's standard output.
    pub stdout: String,
}

/// Why one `ssh` call failed, as one line naming the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshError(pub String);

impl std::fmt::Display for SshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl SshOptions {
    /// Run `argv` on `host` through `ssh`, its stdin from `stdin` (else
    /// nothing), killed (by PID) after `timeout`. `what` says in an error what
    /// the call was for.
    pub fn run(
        &self,
        host: &SshHost,
        argv: &[&str],
        stdin: Option<&Path>,
        timeout: Duration,
        what: &str,
    ) -> Result<Output, SshError> {
        let mut cmd = Command::new("ssh");
        if let Some(c) = &self.config {
            cmd.arg("-F").arg(c);
        }
        // Never prompt (a deploy runs unattended), give up on a dead host soon.
        cmd.args(["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        cmd.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
        for o in &self.options {
            cmd.arg("-o").arg(o);
        }
        if let Some(p) = host.port {
            cmd.arg("-p").arg(p.to_string());
        }
        let remote: Vec<String> = argv.iter().map(|w| sh_quote(w)).collect();
        cmd.arg("--").arg(host.destination()).arg(remote.join(" "));
        let input = match stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).map_err(|e| {
                SshError(format!(
                    "host {}: cannot read {} to copy it ({what}): {e}",
                    host.label,
                    p.display()
                ))
            })?),
            None => Stdio::null(),
        };
        let mut child = cmd
            .stdin(input)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                SshError(format!(
                    "host {}: cannot run ssh (Debian package openssh-client): {e}",
                    host.label
                ))
            })?;
        let drain = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut buf);
                }
                String::from_utf8_lossy(&buf).into_owned()
            })
        };
        let out = drain(
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        );
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() >= deadline => {
                    // Child::kill signals this child's own PID.
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    return Err(SshError(format!(
                        "host {}: waiting for ssh ({what}): {e}",
                        host.label
                    )));
                }
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let said = one_line(&stderr);
        match status {
            None => Err(SshError(format!(
                "host {}: ssh did not finish {what} within {} s{}",
                host.label,
                timeout.as_secs(),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                }
            ))),
            Some(s) if s.success() => Ok(Output { stdout }),
            // ssh's own failure (no connection, authentication, host key).
            Some(s) if s.code() == Some(255) => Err(SshError(format!(
                "host {}: cannot reach it over ssh ({what}): {}",
                host.label,
                if said.is_empty() {
                    "ssh exited with status 255".to_string()
                } else {
                    said
                }
            ))),
            Some(s) => Err(SshError(format!(
                "host {}: {what} failed there ({s}): {}",
                host.label,
                if said.is_empty() {
                    one_line(&stdout)
                } else {
                    said
                }
            ))),
        }
    }
}

/// A command's messages as one line: the lines joined with "; ", ssh's
/// warnings about adding host keys left out.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_with_user_port_and_ipv6() {
        let h = SshHost::parse("root@10.0.0.5:2222").unwrap();
        assert_eq!(
            (h.user.as_deref(), h.host.as_str(), h.port),
            (Some("root"), "10.0.0.5", Some(2222))
        );
        assert_eq!(h.destination(), "root@10.0.0.5");
        let h = SshHost::parse("gen1").unwrap();
        assert_eq!((h.user, h.host.as_str(), h.port), (None, "gen1", None));
        let h = SshHost::parse("[fd00::5]:22").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("fd00::5", Some(22)));
        let h = SshHost::parse("fd00::5").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("fd00::5", None));
        for bad in [
            "",
            "root@",
            "@h",
            "h:0",
            "h:x",
            "-oProxyCommand=x",
            "h;rm",
            "a b",
        ] {
            let e = SshHost::parse(bad).unwrap_err();
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains("[USER@]HOST[:PORT]"),
                "{e}"
            );
        }
    }

    #[test]
    fn quoting_wraps_and_escapes_single_quotes() {
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }
}
