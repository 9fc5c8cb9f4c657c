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
