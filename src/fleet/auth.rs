//! The shared token: read from a file, sent as `Authorization: Bearer`, and
//! compared in constant time so a wrong guess learns nothing from timing.

use std::path::Path;

/// Read a token file: its first line, trimmed; refuses an empty one.
pub fn load_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read token file {}: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(format!(
            "token file {} is empty (put one line of random text in it, e.g. `head -c 32 /dev/urandom | base64 > {}`)",
            path.display(),
            path.display()
        ));
    }
    if token.len() < 16 {
        return Err(format!(
            "token in {} is {} characters; use at least 16",
            path.display(),
            token.len()
        ));
    }
    Ok(token)
}

/// The `Authorization` header value for `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Whether the `Authorization` header value `header` carries `token`.
/// Time depends only on the lengths, never on where the bytes differ.
pub fn authorized(header: Option<&str>, token: &str) -> bool {
    let given = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("")
        .as_bytes();
    constant_time_eq(given, token.as_bytes())
}

/// Byte-string equality that reads every byte of the longer input.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= (x ^ y) as u64;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_compare() {
        let t = "0123456789abcdef-token";
        assert!(authorized(Some(&bearer(t)), t));
        assert!(!authorized(Some(&bearer("0123456789abcdef-tokem")), t));
        assert!(!authorized(Some(&bearer("0123456789abcdef-token2")), t));
        assert!(!authorized(Some(t), t));
        assert!(!authorized(None, t));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"a", b""));
    }

    #[test]
    fn token_file_rules() {
        let dir = std::env::temp_dir().join(format!("storlab-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t");
        std::fs::write(&f, "  \n").unwrap();
        assert!(load_token(&f).unwrap_err().contains("empty"));
        std::fs::write(&f, "short\n").unwrap();
        assert!(load_token(&f).unwrap_err().contains("at least 16"));
        std::fs::write(&f, "a-long-enough-token\nignored\n").unwrap();
        assert_eq!(load_token(&f).unwrap(), "a-long-enough-token");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
