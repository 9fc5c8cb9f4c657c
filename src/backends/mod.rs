//! Backends: where bytes go. Each implements [`crate::engine::Backend`].
