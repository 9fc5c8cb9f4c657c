//! Assertions the tests share: a message must contain a part, or start with
//! it, and shows itself whole when it does not.

/// Assert that `text` contains `part`.
#[track_caller]
pub(crate) fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "{text}\nwants: {part}");
}

/// Assert that `text` starts with `start`.
#[track_caller]
pub(crate) fn assert_starts(text: &str, start: &str) {
    assert!(
        text.starts_with(start),
        "{text}\nwants at the start: {start}"
    );
}

/// The error lines of an import (fio job file, Iometer .icf) that must fail.
#[track_caller]
pub(crate) fn import_errors(
    imported: Result<super::import::Imported, super::import::ImportErrors>,
) -> Vec<String> {
    imported
        .unwrap_err()
        .0
        .iter()
        .map(|e| e.to_string())
        .collect()
}

/// The files of the repository's `examples/DIR` whose names end in `.EXT`.
pub(crate) fn example_files(dir: &str, ext: &str) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(dir);
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect()
}

/// A fresh, empty directory for one test: `storlab-TAG-PID` under the
/// system's temporary directory, emptied of whatever an earlier run left.
pub(crate) fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("storlab-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
