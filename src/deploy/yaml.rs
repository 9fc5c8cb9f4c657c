//! A small YAML writer for the manifests: block mappings and sequences,
//! strings plain when they cannot be read as anything else, double-quoted
//! (JSON's escapes, which YAML's double-quoted scalars share) otherwise.

use serde_json::Value;

/// `v` as one YAML document's body (no `---`).
pub fn document(v: &Value) -> String {
    let mut out = String::new();
    node(&mut out, v, 0);
    out
}

/// Words YAML 1.1 (which kubectl's parser follows) reads as booleans or null.
const SPECIAL: [&str; 12] = [
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "nan", "inf",
];

/// Whether `s` can be written without quotes and still be read as this string.
fn plain(s: &str) -> bool {
    // A leading '-' only before a letter or another '-' (`--listen`): "-1"
    // would be a number, "- x" a sequence.
    let first = match s.as_bytes() {
        [b'-', b'-' | b'a'..=b'z' | b'A'..=b'Z', ..] => true,
        [c, ..] => c.is_ascii_alphabetic() || *c == b'/',
        [] => false,
    };
    first
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && !SPECIAL.contains(&s.to_ascii_lowercase().as_str())
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) if plain(s) => s.clone(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

/// Keys written first, in this order, where a mapping has them (the order
/// Kubernetes objects are read in); the others follow in the map's order.
const FIRST: [&str; 5] = ["apiVersion", "kind", "metadata", "name", "type"];

/// The entries of a mapping in writing order.
fn entries(m: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut first: Vec<(&String, &Value)> = Vec::new();
    for k in FIRST {
        if let Some(kv) = m.get_key_value(k) {
            first.push(kv);
        }
    }
    first.extend(m.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())));
    first
}

/// Write `v` at `indent` spaces: a block node, each line ending in '\n'.
fn node(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, val) in entries(m) {
                let key = if plain(k) {
                    k.clone()
                } else {
                    Value::from(k.as_str()).to_string()
                };
                if is_block(val) {
                    out.push_str(&format!("{pad}{key}:\n"));
                    node(out, val, indent + 2);
                } else {
                    out.push_str(&format!("{pad}{key}: {}\n", scalar(val)));
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                if is_block(item) {
                    // The item one level in, its first line's indent taken by "- ".
                    let mut inner = String::new();
                    node(&mut inner, item, indent + 2);
                    out.push_str(&pad);
                    out.push_str("- ");
                    out.push_str(&inner[indent + 2..]);
                } else {
                    out.push_str(&format!("{pad}- {}\n", scalar(item)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_plain_and_quoted_scalars() {
        let v = json!({
            "kind": "Job",
            "spec": {"n": 0, "args": ["run", "--hosts", "null:", "$(POD_IP):7878", "8", "yes", "", "-1"],
                     "list": [{"x": {"y": true}, "name": "a"}, {"name": "b"}],
                     "nested": [[1, 2]], "empty": {}, "none": []},
            "odd key": "it's \"quoted\"\n"
        });
        let want = [
            "kind: Job",
            r#""odd key": "it's \"quoted\"\n""#,
            "spec:",
            "  args:",
            "    - run",
            "    - --hosts",
            r#"    - "null:""#,
            r#"    - "$(POD_IP):7878""#,
            r#"    - "8""#,
            r#"    - "yes""#,
            r#"    - """#,
            r#"    - "-1""#,
            "  empty: {}",
            "  list:",
            "    - name: a",
            "      x:",
            r#"        "y": true"#,
            "    - name: b",
            r#"  "n": 0"#,
            "  nested:",
            "    - - 1",
            "      - 2",
            "  none: []",
        ];
        assert_eq!(document(&v), want.join("\n") + "\n");
        // Kubernetes' order first, then the rest (here: alphabetical).
        let obj = json!({"spec": 1, "metadata": 2, "kind": "Pod", "apiVersion": "v1", "zz": 3, "name": "x"});
        assert_eq!(
            document(&obj),
            "apiVersion: v1\nkind: Pod\nmetadata: 2\nname: x\nspec: 1\nzz: 3\n"
        );
    }
}
